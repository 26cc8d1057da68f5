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
import type { DeltaRows } from '../model/delta-batch.js';

const ER_DUP_ENTRY = 1062;
const ER_LOCK_WAIT_TIMEOUT = 1205;
const ER_LOCK_DEADLOCK = 1213;

/** MariaDB's table value constructors (`VALUES (…), (…)` in a derived table) arrived in 10.3.3. */
const MARIADB_VALUES_SINCE = [10, 3, 3];

/**
 * MySQL and MariaDB: the deltas as a derived table (one SELECT per row, joined by UNION ALL, which both
 * servers take) joined on the primary key. On MariaDB 10.3.3 and later the rows after the first are a
 * `VALUES` list instead (see `forServer`).
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
  forServer: (version) => (isMariaDbWithValues(version) ? mariadbDialect : mysqlDialect),

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
  addDeltas: (target, rows, from, to) => joinedDeltas(target, rows, from, to, 'values'),
  forServer: undefined,
};

/** Whether `SELECT VERSION()` names a MariaDB that takes `VALUES` lists (e.g. `10.11.19-MariaDB-0+deb12u1`). */
export function isMariaDbWithValues(version: string): boolean {
  if (!/mariadb/i.test(version)) return false;
  const parts = (/^(\d+)\.(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  if (parts.length < 3) return false;
  for (let i = 0; i < 3; i++) {
    if (parts[i] !== MARIADB_VALUES_SINCE[i]) return parts[i] > MARIADB_VALUES_SINCE[i];
  }
  return true;
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
