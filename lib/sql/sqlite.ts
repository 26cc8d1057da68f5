import {
  currentValue,
  driverErrorOf,
  rowParams,
  type CounterDialect,
  type DeltaRows,
  type DeltaTarget,
  type Statement,
} from './counter-dialect.js';

const DUPLICATE = new Set(['SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_UNIQUE']);

/**
 * Rows of every UPDATE statement: a batch's last statement is padded to this many with rows that match
 * no id (all NULL), so a table's statements share one text. better-sqlite3 compiles a statement before
 * it runs it, and compiling a VALUES list of 1,000 rows took longer than running it (about 2 ms); the
 * compiled statements are kept by their text (by TypeORM's query runner, `statementCacheSize`, and on
 * better-sqlite3 by BetterSqlite3Statements, which runs the flush's UPDATEs), so a text that repeats is
 * compiled once. 100,000 rows in transactions of 500-1,900 rows (scratch script, better-sqlite3 with
 * such a cache, best of 5): 243 ms with one statement of a new text per transaction, 89 ms in padded
 * statements of 256 rows, 97 ms as 5,000-row statements of one text (the flush bench's bulk UPDATE).
 */
const STATEMENT_ROWS = 256;

/**
 * Rows per flush transaction by default. SQLite has one writer at a time, which locks the whole database
 * for any transaction, so larger transactions lock no more rows; each `COMMIT` syncs the write-ahead log
 * (83 of them took 11–21 ms of a 100,000-row flush of about 220 ms with 1,000), and on SQLite the flush
 * is bound by Node's thread, which runs the statements. A scratch copy of the flush bench (100,000 rows,
 * four flushes per setting, with two workers and their claims in one round trip per transaction): the
 * event loop's CPU per flush 176–184 ms with 1,000, 147–186 ms with 4,000 (12 flushes), 145–152 ms with
 * 6,000. Later, with three workers (the same scratch copy, seven flushes per process, the first two
 * left out, four processes of each in turns): medians per process of 106–116 ms per flush with 4,000,
 * 102–105 ms with 8,000. A transaction of 8,000 rows holds the database's lock for about 15 ms.
 */
const SQLITE_FLUSH_BATCH_SIZE = 8_000;

/** SQLite binds at most 32,766 parameters per statement; a row takes its id and one per column. */
const MAX_PARAMETERS = 32_766;

/**
 * SQLite (better-sqlite3): `UPDATE … FROM` a VALUES list (SQLite 3.33+), about three times faster than
 * a CASE per column on 500-row batches; the database lock serialises writers, so row order is moot. The
 * list sits in the FROM clause, where SQLite reads it row by row as the UPDATE goes; as a `WITH` table
 * it is copied into a temporary table first (`EXPLAIN QUERY PLAN`: MATERIALIZE), which cost a fifth
 * more (0.57–0.58 against 0.47 µs per row, 256-row statements in 1,000-row transactions, better-sqlite3
 * alone, medians of 12 runs in turns).
 */
export const sqliteDialect: CounterDialect = {
  parallelTransactions: 1,
  defaultFlushBatchSize: SQLITE_FLUSH_BATCH_SIZE,
  // SQLite stores every integer in up to 8 bytes, whatever the declared type.
  integerRange: () => undefined,
  placeholder: () => '?',
  maxRowsPerStatement: (columns) => Math.min(STATEMENT_ROWS, Math.floor(MAX_PARAMETERS / (1 + columns))),

  addDeltas: joinedDeltas,

  isDuplicateKey: (error) => DUPLICATE.has(String(driverErrorOf(error).code)),
  isTransient: (error) => String(driverErrorOf(error).code ?? '').startsWith('SQLITE_BUSY'),
  // One writer at a time: SQLite waits (busy) instead of deadlocking.
  isDeadlock: () => false,
};

/** Statement texts by target, built once: each is the key of TypeORM's statement cache. */
const statementTexts = new Map<string, string>();
/**
 * The text of each target object: a table's statements in a transaction share one target, so the key
 * of `statementTexts` (joins and a long string) is made once per table and transaction. Made for every
 * statement, a 256-row statement's text and parameters took 3.0-5.0 µs, against 2.6-2.8 µs (measured
 * alone, runs in turns, 2026-11-24).
 */
const textOfTarget = new WeakMap<DeltaTarget, string>();

function joinedDeltas(target: DeltaTarget, rows: DeltaRows, from: number, to: number): Statement {
  const rowsPerStatement = sqliteDialect.maxRowsPerStatement(target.columns.length);
  // A NULL id equals nothing, so a padding row updates no row (and `changes` counts real rows only).
  const params = rowParams(rows, from, to, target.columns.length, rowsPerStatement * (1 + target.columns.length));
  return { sql: statementText(target, rowsPerStatement), params };
}

function statementText(target: DeltaTarget, rows: number): string {
  let text = textOfTarget.get(target);
  if (text === undefined) textOfTarget.set(target, (text = statementTextOf(target, rows)));
  return text;
}

function statementTextOf(target: DeltaTarget, rows: number): string {
  const key = `${target.table} ${target.idColumn} ${target.columns.join(' ')} ${target.nullable.join(' ')}`;
  let sql = statementTexts.get(key);
  if (sql === undefined) {
    const tuple = `(${['?', ...target.columns.map(() => '?')].join(', ')})`;
    // A VALUES table's columns are column1 (the id), column2 (the first delta) and so on.
    const assignments = target.columns.map(
      (column, index) =>
        `${column} = ${currentValue(`${target.table}.${column}`, target.nullable[index])} + v.column${index + 2}`,
    );
    sql =
      `UPDATE ${target.table} SET ${assignments.join(', ')} ` +
      `FROM (VALUES ${Array.from({ length: rows }, () => tuple).join(', ')}) AS v WHERE ${target.table}.${target.idColumn} = v.column1`;
    statementTexts.set(key, sql);
  }
  return sql;
}
