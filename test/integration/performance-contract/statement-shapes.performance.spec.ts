import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CounterApp } from '../../support/counter-app.js';
import { useCounterSuite } from '../../support/counter-suite.js';
import { DATABASES, type DatabaseName } from '../../../support/databases.js';
import { Article, Tally } from '../../fixtures/entities.js';
import { articleCounts, insertArticles } from '../../../support/rows.js';
import { countOnNullableColumn } from '../../support/tallies.js';

// Performance contract: these tests pin the shape of an optimisation documented in docs/PERFORMANCE.md
// (each database's batch UPDATE), not a guarantee, and change when that optimisation does. The guarantees
// it must keep are proven by the specs in test/integration/.

/** The statement each database's batch UPDATE is recognised by. */
const UPDATE_SHAPES: Record<DatabaseName, RegExp> = {
  postgres: /^UPDATE .* FROM unnest\(/s,
  mariadb: /^UPDATE .* JOIN \(SELECT \? AS id, .* UNION ALL VALUES \(\?, \?(, \?)*\), \(/s,
  sqlite: /^UPDATE .* FROM \(VALUES .*\) AS v WHERE /s,
};

/** Every statement the app sends, in order: TypeORM tells the data source's logger of each. */
function recordedStatements(counter: CounterApp): string[] {
  const sent: string[] = [];
  vi.spyOn(counter.dataSource.logger, 'logQuery').mockImplementation((sql: string) => void sent.push(sql));
  return sent;
}

// The batch UPDATE takes the shape measured fastest for the server it reaches (on MariaDB 10.3.3 and
// later the derived table's rows as a VALUES list, asked of the server once), and stays exact.
describe.each(DATABASES)('the batch UPDATE on %s', (database) => {
  const suite = useCounterSuite(database, 'shapes', { shards: 2 });
  let counter: CounterApp;
  beforeAll(() => void (counter = suite.counter));
  afterEach(() => vi.restoreAllMocks());

  it('adds the deltas of a batch of several rows in one statement of its shape', async () => {
    const ids = await insertArticles(counter.dataSource, [10, 20, 30, 40, 50, 60]);
    const sent = recordedStatements(counter);
    // Two flushes: the server's version is asked at the first only.
    for (const round of [1, 2]) {
      for (const [i, id] of ids.entries()) await counter.counters.increment(Article, id, 'like_count', i + 1);
      const report = await counter.counters.flush();
      expect(report.error).toBeUndefined();
      expect(report.rows).toBe(6);
      const counts = await articleCounts(counter.dataSource, ids);
      expect(ids.map((id) => counts.get(id)!.likes)).toEqual(
        [10, 20, 30, 40, 50, 60].map((start, i) => start + round * (i + 1)),
      );
    }

    const updates = sent.filter((sql) => /^(UPDATE|WITH)/.test(sql));
    expect(updates.length).toBeGreaterThanOrEqual(2);
    expect(updates.filter((sql) => !UPDATE_SHAPES[database].test(sql))).toEqual([]);
    // Only like_count changed: view_count, which no row of the batch changes, is not in the statement.
    expect(updates.filter((sql) => !sql.includes('like_count') || sql.includes('view_count'))).toEqual([]);
    expect(sent.filter((sql) => /VERSION\(\)/i.test(sql))).toHaveLength(database === 'mariadb' ? 1 : 0);
  });
});

// A nullable counter column may hold NULL, which the batch UPDATE adds to as if it were 0 (as a seed
// reads it); only such a column pays for the COALESCE in the statement.
describe.each(DATABASES)('a nullable counter column on %s', (database) => {
  const suite = useCounterSuite(database, 'nullable-shape', { shards: 2 }, 1, [Tally]);
  let counter: CounterApp;
  beforeAll(() => void (counter = suite.counter));
  afterEach(() => vi.restoreAllMocks());

  it('adds the delta to NULL as to 0, and leaves COALESCE out for a NOT NULL column', async () => {
    const sent = recordedStatements(counter);
    await countOnNullableColumn(counter);
    const updates = sent.filter((sql) => UPDATE_SHAPES[database].test(sql));
    expect(updates.length).toBeGreaterThanOrEqual(1);
    for (const update of updates) {
      expect(update.match(/COALESCE\(/g)).toHaveLength(1);
      expect(update).toMatch(/COALESCE\([^)]*maybe_count[^)]*, 0\)/);
    }
  });
});

// better-sqlite3 compiles every statement text it has not seen, and TypeORM's query runner keeps the
// compiled statements by text: every batch UPDATE of a table has the same 256 rows, the last one padded
// with rows that match nothing, so that it is one text, compiled once.
describe.runIf(DATABASES.includes('sqlite'))('the batch UPDATE on sqlite, batch after batch', () => {
  const suite = useCounterSuite('sqlite', 'shapes-padded', { shards: 2 });
  afterEach(() => vi.restoreAllMocks());

  it('is one statement text per table, and changes only the batch rows', async () => {
    const counter = suite.counter;
    const sent = recordedStatements(counter);
    const bystanders = await insertArticles(counter.dataSource, [5, 6]);
    const ids = await insertArticles(
      counter.dataSource,
      Array.from({ length: 300 }, (_, i) => i),
    );
    for (const round of [1, 2, 3]) {
      // 300 rows, then 1, then 300 again: statements of 256 rows, the last of each batch padded.
      const changed = round === 2 ? ids.slice(0, 1) : ids;
      await Promise.all(changed.map((id, i) => counter.counters.increment(Article, id, 'like_count', i + round)));
      const report = await counter.counters.flush();
      expect(report.error).toBeUndefined();
      expect(report.rows).toBe(changed.length);
    }
    const counts = await articleCounts(counter.dataSource, [...ids, ...bystanders]);
    expect(ids.map((id) => counts.get(id)!.likes)).toEqual(
      ids.map((_, i) => i + (i + 1) + (i + 3) + (i === 0 ? 2 : 0)),
    );
    expect(bystanders.map((id) => counts.get(id)!.likes)).toEqual([5, 6]);
    const updates = sent.filter((sql) => UPDATE_SHAPES.sqlite.test(sql));
    // Two statements for each batch of 300 rows, one for the batch of 1.
    expect(updates).toHaveLength(5);
    expect(new Set(updates).size).toBe(1);
    expect(updates[0].match(/\(\?, \?\)/g)).toHaveLength(256);
  });
});
