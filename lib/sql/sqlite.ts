import { driverErrorOf, type CounterDialect, type DeltaRow, type DeltaTarget, type Statement } from './counter-dialect.js';

const DUPLICATE = new Set(['SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_UNIQUE']);

/**
 * SQLite (better-sqlite3): `UPDATE … FROM` a VALUES table (SQLite 3.33+), about three times faster than
 * a CASE per column on 500-row batches; the database lock serialises writers, so row order is moot.
 */
export const sqliteDialect: CounterDialect = {
  parallelTransactions: 1,
  // SQLite stores every integer in up to 8 bytes, whatever the declared type.
  integerRange: () => undefined,
  placeholder: () => '?',
  // SQLite binds at most 32,766 parameters per statement; a row takes its id and one per column.
  maxRowsPerStatement: (columns) => Math.floor(32_766 / (1 + columns)),

  addDeltas: joinedDeltas,

  isDuplicateKey: (error) => DUPLICATE.has(String(driverErrorOf(error).code)),
  isTransient: (error) => String(driverErrorOf(error).code ?? '').startsWith('SQLITE_BUSY'),
  // One writer at a time: SQLite waits (busy) instead of deadlocking.
  isDeadlock: () => false,
};

function joinedDeltas(target: DeltaTarget, rows: DeltaRow[]): Statement {
  const params: unknown[] = [];
  const tuple = `(${['?', ...target.columns.map(() => '?')].join(', ')})`;
  for (const row of rows) params.push(row.id, ...row.deltas);
  const deltaNames = target.columns.map((_, index) => `d${index}`);
  const assignments = target.columns.map(
    (column, index) => `${column} = COALESCE(${target.table}.${column}, 0) + v.d${index}`,
  );
  return {
    sql:
      `WITH v(id, ${deltaNames.join(', ')}) AS (VALUES ${rows.map(() => tuple).join(', ')}) ` +
      `UPDATE ${target.table} SET ${assignments.join(', ')} FROM v WHERE ${target.table}.${target.idColumn} = v.id`,
    params,
  };
}
