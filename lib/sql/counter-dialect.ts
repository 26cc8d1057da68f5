/** A row of a batch: its id as bound in SQL and one delta per updated column. */
export interface DeltaRow {
  id: string | number;
  deltas: number[];
}

/** The target of one set-based UPDATE, with identifiers already quoted by the driver. */
export interface DeltaTarget {
  table: string;
  idColumn: string;
  /** The id column's SQL type, for dialects that need typed parameters. */
  idType: string;
  columns: string[];
}

export interface Statement {
  sql: string;
  params: unknown[];
}

/** What differs between databases: statement shapes, placeholders and error codes. */
export interface CounterDialect {
  /** Batch transactions one process may run at once (SQLite's driver has a single connection). */
  parallelTransactions: number;
  placeholder(position: number): string;
  /** One statement adding every delta of the batch; rows arrive sorted by id. */
  addDeltas(target: DeltaTarget, rows: DeltaRow[]): Statement;
  /** The ledger insert of a batch collided with an existing batch id. */
  isDuplicateKey(error: unknown): boolean;
  /** A deadlock, serialization failure or busy database: the transaction may simply be run again. */
  isTransient(error: unknown): boolean;
}

interface DriverError {
  code?: string;
  errno?: number;
}

export function driverErrorOf(error: unknown): DriverError {
  const wrapped = error as { driverError?: DriverError } | undefined;
  return (wrapped?.driverError ?? wrapped ?? {}) as DriverError;
}

/** `col = COALESCE(col, 0) + CASE id WHEN ? THEN ? … ELSE 0 END` per column, for MySQL and SQLite. */
export function caseDeltaAssignments(
  target: DeltaTarget,
  rows: DeltaRow[],
  placeholder: (position: number) => string,
): Statement {
  const params: unknown[] = [];
  const bind = (value: unknown) => {
    params.push(value);
    return placeholder(params.length);
  };
  const assignments = target.columns.map((column, index) => {
    const whens = rows
      .filter((row) => row.deltas[index] !== 0)
      .map((row) => `WHEN ${bind(row.id)} THEN ${bind(row.deltas[index])}`)
      .join(' ');
    return `${column} = COALESCE(${column}, 0) + CASE ${target.idColumn} ${whens} ELSE 0 END`;
  });
  const ids = rows.map((row) => bind(row.id)).join(', ');
  return { sql: `UPDATE ${target.table} SET ${assignments.join(', ')} WHERE ${target.idColumn} IN (${ids})`, params };
}
