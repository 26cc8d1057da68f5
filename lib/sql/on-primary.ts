import type { DataSource, EntityManager } from 'typeorm';

/**
 * Runs `work` with an EntityManager bound to one connection to the primary, released after. With
 * TypeORM `replication` (0.3 and 1.x alike) a `find` or query builder without a query runner of its own
 * reads a replica (`replication.defaultMode`, default 'slave'), which may lag behind: a read the counters'
 * correctness depends on (loading a row, the ledger, a recount's source) must never see an older state.
 * Without replication the 'master' runner is the data source's only kind.
 */
export async function onPrimary<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T>): Promise<T> {
  const runner = dataSource.createQueryRunner('master');
  try {
    return await work(runner.manager);
  } finally {
    await runner.release();
  }
}
