import { caseDeltaAssignments, driverErrorOf, type CounterDialect } from './counter-dialect.js';

const DUPLICATE = new Set(['SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_UNIQUE']);

/** SQLite (better-sqlite3): a CASE per column; the database lock serialises writers. */
export const sqliteDialect: CounterDialect = {
  parallelTransactions: 1,
  // SQLite stores every integer in up to 8 bytes, whatever the declared type.
  integerRange: () => undefined,
  placeholder: () => '?',

  addDeltas: (target, rows) => caseDeltaAssignments(target, rows, () => '?'),

  isDuplicateKey: (error) => DUPLICATE.has(String(driverErrorOf(error).code)),
  isTransient: (error) => String(driverErrorOf(error).code ?? '').startsWith('SQLITE_BUSY'),
};
