import { driverErrorOf, fixedIntegerRange, type CounterDialect, type DeltaRow, type DeltaTarget, type Statement } from './counter-dialect.js';

const ER_DUP_ENTRY = 1062;
const ER_LOCK_WAIT_TIMEOUT = 1205;
const ER_LOCK_DEADLOCK = 1213;

/**
 * MySQL and MariaDB: the deltas as a derived table (one SELECT per row, joined by UNION ALL, which both
 * servers take) joined on the primary key.
 */
export const mysqlDialect: CounterDialect = {
  parallelTransactions: 4,
  integerRange: fixedIntegerRange,
  placeholder: () => '?',
  // Beyond a few thousand rows the derived table costs more per row (MariaDB, 3 columns: 8.2 µs per row
  // at 1,000 rows, 10.7 at 2,000, 15.9 at 4,000).
  maxRowsPerStatement: () => 1_000,

  addDeltas: joinedDeltas,

  isDuplicateKey: (error) => driverErrorOf(error).errno === ER_DUP_ENTRY,
  isTransient: (error) => {
    const errno = driverErrorOf(error).errno;
    return errno === ER_LOCK_DEADLOCK || errno === ER_LOCK_WAIT_TIMEOUT;
  },
  isDeadlock: (error) => driverErrorOf(error).errno === ER_LOCK_DEADLOCK,
};

/**
 * `UPDATE t JOIN (SELECT ? AS id, ? AS d0 … UNION ALL SELECT ?, ? …) AS v ON t.id = v.id SET …`. It
 * replaced a CASE per column (`CASE id WHEN ? THEN ? …`), whose cost grows with the square of the rows
 * (12 µs per row at 500 rows, 17 at 1,000). A multi-table UPDATE takes no ORDER BY, so the server
 * picks the order in which it locks the rows. Flushers cannot deadlock each other over it: they never
 * write the same rows at once (each holds its shards' leases, and a batch written twice meets the
 * ledger's key before any row). An outside transaction that locks the batch's rows in another order
 * can; the deadlocked flush runs again (DEADLOCK_ATTEMPTS).
 */
function joinedDeltas(target: DeltaTarget, rows: DeltaRow[]): Statement {
  const params: unknown[] = [];
  const deltaNames = target.columns.map((_, index) => `d${index}`);
  const named = `SELECT ? AS id${deltaNames.map((name) => `, ? AS ${name}`).join('')}`;
  const unnamed = `SELECT ?${deltaNames.map(() => ', ?').join('')}`;
  for (const row of rows) params.push(row.id, ...row.deltas);
  const derived = [named, ...rows.slice(1).map(() => unnamed)].join(' UNION ALL ');
  const assignments = target.columns.map(
    (column, index) => `t.${column} = COALESCE(t.${column}, 0) + v.d${index}`,
  );
  return {
    sql:
      `UPDATE ${target.table} AS t JOIN (${derived}) AS v ON t.${target.idColumn} = v.id ` +
      `SET ${assignments.join(', ')}`,
    params,
  };
}
