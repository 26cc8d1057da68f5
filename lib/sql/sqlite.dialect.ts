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

/** Rows of one UPDATE statement at most: a VALUES list longer than this takes SQLite longer to compile. */
const STATEMENT_ROWS = 256;

/**
 * Rows per flush transaction by default. SQLite has one writer at a time, which locks the whole database
 * whatever a transaction's size, and every COMMIT syncs its log: fewer, larger transactions take less of
 * Node's thread, which runs SQLite's statements (see docs/PERFORMANCE.md, "SQLite transactions").
 */
const SQLITE_FLUSH_BATCH_SIZE = 8_000;

/** SQLite binds at most 32,766 parameters per statement; a row takes its id and one per column. */
const MAX_PARAMETERS = 32_766;

/**
 * SQLite (better-sqlite3): `UPDATE … FROM` a VALUES list (SQLite 3.33+), in the FROM clause, where SQLite
 * reads it row by row as the UPDATE goes (as a WITH table it would copy it first). The database lock
 * serialises writers, so row order is moot.
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

function joinedDeltas(target: DeltaTarget, rows: DeltaRows, from: number, to: number): Statement {
  const tuple = `(${['?', ...target.columns.map(() => '?')].join(', ')})`;
  // A VALUES table's columns are column1 (the id), column2 (the first delta) and so on.
  const assignments = target.columns.map(
    (column, index) =>
      `${column} = ${currentValue(`${target.table}.${column}`, target.nullable[index])} + v.column${index + 2}`,
  );
  return {
    sql:
      `UPDATE ${target.table} SET ${assignments.join(', ')} ` +
      `FROM (VALUES ${Array.from({ length: to - from }, () => tuple).join(', ')}) AS v ` +
      `WHERE ${target.table}.${target.idColumn} = v.column1`,
    params: rowParams(rows, from, to, target.columns.length),
  };
}
