import type { DataSource, QueryRunner } from 'typeorm';

/** Rows the database server updated, counted by the server itself, from `start` to `stop`. */
export interface RowWriteCount {
  /** Row updates since `startRowWriteCount`; call it when the pool's connections are idle. */
  stop(): Promise<number>;
}

/**
 * Starts counting the row updates the server performs on `table` for this DataSource (PostgreSQL,
 * MariaDB). Reads happen through the DataSource's own pool: a StatementLog logger sees them, so
 * take its figures outside `startRowWriteCount`…`stop`.
 */
export async function startRowWriteCount(dataSource: DataSource, table: string): Promise<RowWriteCount> {
  switch (dataSource.options.type) {
    case 'postgres': {
      const before = await postgresTableUpdates(dataSource, table);
      return { stop: async () => (await postgresTableUpdates(dataSource, table)) - before };
    }
    case 'mariadb':
    case 'mysql': {
      const before = await mariadbSessionUpdates(dataSource);
      return {
        stop: async () => {
          const after = await mariadbSessionUpdates(dataSource);
          // A connection closed in between took its count with it: the figure would be too low.
          const gone = [...before.keys()].filter((id) => !after.has(id));
          if (gone.length > 0)
            throw new Error(`pooled connections ${gone.join(', ')} closed while counting row writes`);
          let updates = 0;
          for (const [id, count] of after) updates += count - (before.get(id) ?? 0);
          return updates;
        },
      };
    }
    default:
      throw new Error(`row writes are not counted on ${dataSource.options.type}`);
  }
}

/**
 * `pg_stat_user_tables.n_tup_upd` of the table, including every pooled backend's updates. A backend
 * keeps its table counts in local memory and publishes them at the end of a transaction only if a
 * second has passed since its last publication (else up to 10 s later, when idle), or when it exits.
 * PostgreSQL 15's `pg_stat_force_next_flush()` makes the calling backend publish before it next reports
 * ready for a query, i.e. before the reply to the statement that called it reaches us: so the function is
 * called on every connection of the pool, then the view is read (a new transaction: a fresh snapshot,
 * since `stats_fetch_consistency = cache` keeps one per transaction).
 */
async function postgresTableUpdates(dataSource: DataSource, table: string): Promise<number> {
  await onEveryPooledConnection(dataSource, (runner) => runner.query('SELECT pg_stat_force_next_flush()'));
  const schema = (dataSource.options as { schema?: string }).schema ?? 'public';
  const rows: Array<{ updates: string }> = await dataSource.query(
    'SELECT n_tup_upd AS updates FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2',
    [schema, table],
  );
  if (rows.length !== 1) throw new Error(`pg_stat_user_tables has no row for ${schema}.${table}`);
  return Number(rows[0].updates);
}

/**
 * `Handler_update` (row updates requested from the storage engine) of each pooled session, by connection
 * id. MariaDB 10.11 has no `Innodb_rows_updated`, and its per-table statistics need `userstat` (off here,
 * and a global setting of a shared server); the global counters are shared with whoever else uses the
 * server. The sessions of a DataSource are its own, and in the benchmarks they update only the counted
 * table (the ledger is inserted into and pruned, never updated).
 */
async function mariadbSessionUpdates(dataSource: DataSource): Promise<Map<number, number>> {
  const rows = await onEveryPooledConnection(dataSource, async (runner) => {
    const [row]: Array<{ id: string | number; updates: string | number }> = await runner.query(
      'SELECT CONNECTION_ID() AS id, VARIABLE_VALUE AS updates FROM information_schema.SESSION_STATUS ' +
        "WHERE VARIABLE_NAME = 'HANDLER_UPDATE'",
    );
    return [Number(row.id), Number(row.updates)] as const;
  });
  return new Map(rows);
}

/**
 * Runs `work` on every connection the pool has: it takes as many connections at once as the pool may
 * hold, so each existing one is handed out (and missing ones are opened, which cost nothing to count).
 */
async function onEveryPooledConnection<T>(
  dataSource: DataSource,
  work: (runner: QueryRunner) => Promise<T>,
): Promise<T[]> {
  const poolSize = (dataSource.options as { poolSize?: number }).poolSize;
  if (poolSize === undefined) throw new Error('row writes are counted only for a DataSource with an explicit poolSize');
  const runners = Array.from({ length: poolSize }, () => dataSource.createQueryRunner());
  try {
    await Promise.all(runners.map((runner) => runner.connect()));
    return await Promise.all(runners.map(work));
  } finally {
    await Promise.all(runners.map((runner) => runner.release()));
  }
}
