import { DEFAULT_FLUSH_BATCH_SIZE } from '../counter.constants.js';
import {
  currentValue,
  driverErrorOf,
  rowParams,
  fixedIntegerRange,
  isDataException,
  type CounterDialect,
  type DeltaTarget,
  type Statement,
} from './counter-dialect.js';
import {
  bucketColumns,
  bucketParams,
  bucketSumParams,
  bucketSumsSelect,
  bucketTuples,
  bucketsOf,
  sumColumns,
  sumParams,
} from './bucket-statements.js';
import type { DeltaRows } from '../model/delta-batch.js';
import type { BucketRows, BucketTable, RollingTables } from './counter-dialect.js';

const ER_DUP_ENTRY = 1062;
const ER_LOCK_WAIT_TIMEOUT = 1205;
const ER_LOCK_DEADLOCK = 1213;

/** MariaDB's table value constructors (`VALUES (…), (…)` in a derived table) arrived in 10.3.3. */
const MARIADB_VALUES_SINCE = [10, 3, 3];
/** MySQL's row alias in INSERT (`VALUES … AS new`) arrived in 8.0.19, and deprecated `VALUES(column)`. */
const MYSQL_ROW_ALIAS_SINCE = [8, 0, 19];

/**
 * MySQL and MariaDB: the deltas as a derived table (one SELECT per row, joined by UNION ALL, which both
 * servers take) joined on the primary key. On MariaDB 10.3.3 and later the rows after the first are a
 * `VALUES` list instead (see `forServer`). Buckets go in by `INSERT … ON DUPLICATE KEY UPDATE`, which
 * names the inserted value through a row alias on MySQL 8.0.19 and later, by `VALUES(column)` elsewhere.
 */
export const mysqlDialect: CounterDialect = {
  // Each transaction on a pooled connection of its own: `flushConcurrency` sets how many.
  parallelTransactions: Number.POSITIVE_INFINITY,
  defaultFlushBatchSize: DEFAULT_FLUSH_BATCH_SIZE,
  integerRange: fixedIntegerRange,
  placeholder: () => '?',
  // Past about a thousand rows a derived table costs more per row.
  maxRowsPerStatement: () => 1_000,

  addDeltas: (target, rows, from, to) => joinedDeltas(target, rows, from, to, 'select'),
  maxBucketsPerStatement: 1_000,
  addBuckets: (table, buckets, from, to) => upsertedBuckets(table, buckets, from, to, 'row alias'),
  pruneBuckets: (table, counter, before, limit) => {
    const of = bucketsOf(table, counter, () => '?');
    return {
      sql: `DELETE FROM ${table.table} WHERE ${of.sql} AND ${table.start} < ? ORDER BY ${table.start} LIMIT ?`,
      params: [...of.params, before, limit],
    };
  },
  forShare: ' FOR SHARE',
  forUpdate: ' FOR UPDATE',
  insertWindow: (tables) =>
    `INSERT IGNORE INTO ${tables.windows} (${tables.entity}, ${tables.counter}, ${tables.window}, ${tables.from}) ` +
    `VALUES (?, ?, ?, ?)`,
  maxSumsPerStatement: 1_000,
  addRollingSums: (tables, sums, from, to) => {
    const tuple = ' UNION ALL SELECT ?, ?, ?, ?, ?';
    const derived = `SELECT ? AS e, ? AS c, ? AS w, ? AS r, ? AS d${tuple.repeat(to - from - 1)}`;
    return { sql: upsertedSums(tables, derived), params: sumParams(sums, from, to) };
  },
  addBucketSums: (tables, buckets, key, granularity, range, sign) => ({
    sql: upsertedSums(
      tables,
      bucketSumsSelect(buckets, sign, () => '?'),
    ),
    params: bucketSumParams(key, granularity, range),
  }),
  integerOrder: (text) => `CAST(${text} AS DECIMAL(20))`,
  binaryOrder: (text) => `CAST(${text} AS BINARY)`,
  forServer: (version) => {
    if (isMariaDbWithValues(version)) return mariadbDialect;
    return takesRowAlias(version) ? mysqlDialect : valuesFunctionDialect;
  },

  isDuplicateKey: (error) => driverErrorOf(error).errno === ER_DUP_ENTRY,
  isTransient: (error) => {
    const errno = driverErrorOf(error).errno;
    return errno === ER_LOCK_DEADLOCK || errno === ER_LOCK_WAIT_TIMEOUT;
  },
  isDeadlock: (error) => driverErrorOf(error).errno === ER_LOCK_DEADLOCK,
  random: 'RAND()',
  isDataError: (error) => isDataException(driverErrorOf(error).sqlState),
  // CAST cannot name an integer type here; a JSON_TABLE column can (MySQL 8.0.4+, MariaDB 10.6+).
  typedValue: (value, type, unsigned) =>
    `SELECT probe FROM JSON_TABLE('[${value}]', '$[*]' ` +
    `COLUMNS (probe ${type}${unsigned ? ' UNSIGNED' : ''} PATH '$')) AS typed`,
};

/**
 * MariaDB from 10.3.3: the derived table's rows after the first as one `VALUES` list, which the server
 * parses and plans faster than a SELECT per row.
 */
const mariadbDialect: CounterDialect = {
  ...mysqlDialect,
  // MariaDB has no FOR SHARE.
  forShare: ' LOCK IN SHARE MODE',
  addDeltas: (target, rows, from, to) => joinedDeltas(target, rows, from, to, 'values'),
  addBuckets: (table, buckets, from, to) => upsertedBuckets(table, buckets, from, to, 'values function'),
  forServer: undefined,
};

/** MariaDB before 10.3.3 and MySQL before 8.0.19: the derived table of SELECTs, and `VALUES(column)`. */
const valuesFunctionDialect: CounterDialect = {
  ...mysqlDialect,
  forShare: ' LOCK IN SHARE MODE',
  addBuckets: (table, buckets, from, to) => upsertedBuckets(table, buckets, from, to, 'values function'),
  forServer: undefined,
};

/** Whether `SELECT VERSION()` names a MariaDB that takes `VALUES` lists (e.g. `10.11.19-MariaDB-0+deb12u1`). */
export function isMariaDbWithValues(version: string): boolean {
  return /mariadb/i.test(version) && isAtLeast(version, MARIADB_VALUES_SINCE);
}

/** Whether `SELECT VERSION()` names a MySQL that takes a row alias in INSERT (e.g. `8.4.3`). */
function takesRowAlias(version: string): boolean {
  return !/mariadb/i.test(version) && isAtLeast(version, MYSQL_ROW_ALIAS_SINCE);
}

/** Whether the version a server reports (`major.minor.patch…`) is `since` or later; false when unreadable. */
function isAtLeast(version: string, since: number[]): boolean {
  const parts = (/^(\d+)\.(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  if (parts.length < 3) return false;
  for (let i = 0; i < 3; i++) {
    if (parts[i] !== since[i]) return parts[i] > since[i];
  }
  return true;
}

/**
 * `INSERT … VALUES (…), (…) ON DUPLICATE KEY UPDATE value = value + <the inserted value>`: the buckets are
 * locked in the order of the list, which is the primary key's.
 */
function upsertedBuckets(
  table: BucketTable,
  buckets: BucketRows,
  from: number,
  to: number,
  inserted: 'row alias' | 'values function',
): Statement {
  const { value } = table;
  const insert = `INSERT INTO ${table.table} (${bucketColumns(table).join(', ')}) VALUES ${bucketTuples(to - from)}`;
  return {
    sql:
      inserted === 'row alias'
        ? `${insert} AS new ON DUPLICATE KEY UPDATE ${value} = ${table.table}.${value} + new.${value}`
        : `${insert} ON DUPLICATE KEY UPDATE ${value} = ${value} + VALUES(${value})`,
    params: bucketParams(buckets, from, to),
  };
}

/**
 * `INSERT INTO sums … SELECT * FROM (<rows>) AS v ON DUPLICATE KEY UPDATE value = value + v.<delta>`:
 * the rows' column `d`, read through the derived table, which names it on MySQL and MariaDB alike
 * (unlike a row alias or `VALUES(column)`).
 */
function upsertedSums(tables: RollingTables, rows: string): string {
  const { value } = tables;
  return (
    `INSERT INTO ${tables.sums} (${sumColumns(tables).join(', ')}) SELECT * FROM (${rows}) AS v ` +
    `ON DUPLICATE KEY UPDATE ${value} = ${tables.sums}.${value} + v.d`
  );
}

/**
 * `UPDATE t JOIN (SELECT ? AS id, ? AS d0 … UNION ALL SELECT ?, ? …) AS v ON t.id = v.id SET …`, or
 * `… UNION ALL VALUES (?, ? …), (…)` after the first row (MariaDB); a CASE per column would cost the
 * square of the rows. A multi-table UPDATE takes no ORDER BY, so the server
 * picks the order in which it locks the rows. Flushers cannot deadlock each other over it: they never
 * write the same rows at once (each holds its shards' leases, and a batch written twice meets the
 * ledger's key before any row). An outside transaction that locks the batch's rows in another order
 * can; the deadlocked flush runs again (DEADLOCK_ATTEMPTS).
 */
function joinedDeltas(
  target: DeltaTarget,
  rows: DeltaRows,
  from: number,
  to: number,
  rest: 'select' | 'values',
): Statement {
  const deltaNames = target.columns.map((_, index) => `d${index}`);
  const params = rowParams(rows, from, to, target.columns.length);
  // The first row names the columns; the rest follow them.
  const named = `SELECT ? AS id${deltaNames.map((name) => `, ? AS ${name}`).join('')}`;
  const others = to - from - 1;
  let derived = named;
  if (rest === 'values' && others > 0) {
    const tuple = `(?${deltaNames.map(() => ', ?').join('')})`;
    derived += ` UNION ALL VALUES ${Array.from({ length: others }, () => tuple).join(', ')}`;
  } else {
    const unnamed = ` UNION ALL SELECT ?${deltaNames.map(() => ', ?').join('')}`;
    derived += unnamed.repeat(others);
  }
  const assignments = target.columns.map(
    (column, index) => `t.${column} = ${currentValue(`t.${column}`, target.nullable[index])} + v.d${index}`,
  );
  return {
    sql:
      `UPDATE ${target.table} AS t JOIN (${derived}) AS v ON t.${target.idColumn} = v.id ` +
      `SET ${assignments.join(', ')}`,
    params,
  };
}
