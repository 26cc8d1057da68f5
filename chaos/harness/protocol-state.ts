// Where one batch stands in the flush protocol, read from outside: is it still recorded in Redis (claimed,
// not acknowledged), is it in the ledger (committed), is a shard's lease held. Scenarios use these to
// show that a worker really stopped at the step it reported.
import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { CounterLedgerEntry } from '../../lib/index.js';
import { Article } from '../../test/fixtures/entities.js';
import { keysEndingWith } from '../../support/redis.js';

/** Whether some shard's batch key holds `batchId` (the batch hash keeps its id in the field '#id'). */
export async function batchInRedis(redis: Redis, prefix: string, batchId: string): Promise<boolean> {
  for (const key of await keysEndingWith(redis, prefix, ':batch')) {
    if ((await redis.hget(key, '#id')) === batchId) return true;
  }
  return false;
}

export async function batchInLedger(dataSource: DataSource, batchId: string): Promise<boolean> {
  return (await dataSource.getRepository(CounterLedgerEntry).countBy({ batchId })) === 1;
}

/** Whether the lease of the shard whose key tag is `shardTag` (as in a `reached` message) is held. */
export async function leaseHeld(redis: Redis, shardTag: string): Promise<boolean> {
  return (await redis.exists(`${shardTag}:lease`)) === 1;
}

/**
 * Whether another transaction holds a row lock on one of these articles: an UPDATE that ran and was
 * neither committed nor rolled back. Tried with `FOR UPDATE NOWAIT` (PostgreSQL, MariaDB ≥ 10.3).
 */
export async function articleRowsLocked(dataSource: DataSource, ids: number[]): Promise<boolean> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.startTransaction();
    const table = dataSource
      .getMetadata(Article)
      .tablePath.split('.')
      .map((part) => dataSource.driver.escape(part))
      .join('.');
    const placeholders = ids
      .map((_, i) => (dataSource.driver.options.type === 'postgres' ? `$${i + 1}` : '?'))
      .join(', ');
    await runner.query(`SELECT id FROM ${table} WHERE id IN (${placeholders}) FOR UPDATE NOWAIT`, ids);
    return false;
  } catch (error) {
    const driverError = ((error as { driverError?: unknown }).driverError ?? error) as {
      code?: string;
      errno?: number;
    };
    // PostgreSQL: lock_not_available. MariaDB: lock wait timeout (what NOWAIT raises there), MySQL: ER_LOCK_NOWAIT.
    if (driverError.code === '55P03' || driverError.errno === 1205 || driverError.errno === 3572) return true;
    throw error;
  } finally {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    await runner.release();
  }
}
