import { describe, expect, it } from 'vitest';
import type { BucketRows, BucketTable } from '../../lib/sql/counter-dialect.js';
import { mysqlDialect } from '../../lib/sql/mysql.dialect.js';

// MySQL took a row alias for the inserted values in 8.0.19 and deprecated VALUES(column) for it; MariaDB
// knows only VALUES(column). Only MariaDB runs here, so MySQL's shape is checked as text.
const table: BucketTable = {
  table: '`shop`.`counter_bucket`',
  entity: '`entity`',
  counter: '`counter`',
  rowId: '`row_id`',
  granularity: '`granularity`',
  start: '`bucket_start`',
  value: '`value`',
};
const buckets: BucketRows = {
  entity: 'article',
  counters: ['view_count', 'view_count', 'view_count'],
  rowIds: ['1', '2', '3'],
  granularities: ['day', 'hour', 'hour'],
  starts: [0, 3_600, 7_200],
  deltas: [5, -2, 1],
};
const insert =
  'INSERT INTO `shop`.`counter_bucket` (`entity`, `counter`, `row_id`, `granularity`, `bucket_start`, `value`) ' +
  'VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)';

describe('the bucket upsert of MySQL-family servers', () => {
  it.each(['8.0.19', '8.4.3-standard', '9.1.0'])('names the inserted value by a row alias on MySQL %s', (version) => {
    const statement = mysqlDialect.forServer!(version).addBuckets(table, buckets, 1, 3);
    expect(statement.sql).toBe(
      `${insert} AS new ON DUPLICATE KEY UPDATE \`value\` = \`shop\`.\`counter_bucket\`.\`value\` + new.\`value\``,
    );
    expect(statement.params).toEqual([
      'article',
      'view_count',
      '2',
      'hour',
      3_600,
      -2,
      'article',
      'view_count',
      '3',
      'hour',
      7_200,
      1,
    ]);
  });

  it.each(['8.0.18', '10.11.19-MariaDB-0+deb12u1', '10.2.44-MariaDB', '5.5.5-10.11.6-MariaDB', ''])(
    'takes VALUES(value) on %s',
    (version) => {
      const statement = mysqlDialect.forServer!(version).addBuckets(table, buckets, 1, 3);
      expect(statement.sql).toBe(`${insert} ON DUPLICATE KEY UPDATE \`value\` = \`value\` + VALUES(\`value\`)`);
    },
  );
});
