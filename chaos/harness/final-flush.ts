// The "final flush" after a fault: one instance flushes until Redis holds nothing pending for the
// deployment (no dirty id, no batch in flight) and no shard was skipped for another flusher's lease,
// e.g. a dead instance's lease that has not expired yet.
import { scanKeys, type AnyRedis } from '../../support/redis.js';
import type { ChaosWorker } from './chaos-worker.js';
import type { WireFlushReport } from '../worker/worker-protocol.js';

export interface RedisBacklog {
  /** Ids in the shards' dirty sets: rows with deltas not yet claimed. */
  dirtyIds: number;
  /** Batches claimed and not acknowledged. */
  batches: number;
  /** Shard leases currently held. */
  leases: number;
}

export async function redisBacklog(redis: AnyRedis, prefix: string): Promise<RedisBacklog> {
  const keys = await scanKeys(redis, prefix);
  const backlog: RedisBacklog = { dirtyIds: 0, batches: 0, leases: 0 };
  for (const key of keys) {
    // The dirty set was a set, and is a sorted set (by age) since the library's status() came.
    if (key.endsWith(':dirty'))
      backlog.dirtyIds += (await redis.type(key)) === 'zset' ? await redis.zcard(key) : await redis.scard(key);
    else if (key.endsWith(':batch')) backlog.batches++;
    else if (key.endsWith(':lease')) backlog.leases++;
  }
  return backlog;
}

/** Flushes through `worker` until nothing is pending; returns every report. */
export async function flushUntilSettled(
  worker: ChaosWorker,
  redis: AnyRedis,
  prefix: string,
  timeoutMs = 20_000,
): Promise<WireFlushReport[]> {
  const deadline = Date.now() + timeoutMs;
  const reports: WireFlushReport[] = [];
  for (;;) {
    const report = await worker.flush();
    reports.push(report);
    if (!report.error && report.busyShards === 0) {
      const backlog = await redisBacklog(redis, prefix);
      if (backlog.dirtyIds === 0 && backlog.batches === 0) return reports;
    }
    if (Date.now() > deadline) {
      const backlog = await redisBacklog(redis, prefix);
      throw new Error(
        `${worker.name} could not flush everything within ${timeoutMs} ms: last report ${JSON.stringify(report)}, ` +
          `Redis still holds ${JSON.stringify(backlog)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Sum of one field over flush reports. */
export function total(
  reports: WireFlushReport[],
  field: 'batches' | 'rows' | 'recoveredBatches' | 'busyShards' | 'failedShards',
): number {
  return reports.reduce((sum, report) => sum + report[field], 0);
}

/**
 * What Redis still holds to be written, field by field: the change fields of every pending hash and every
 * given-back (`unknown`) hash, and every batch in flight. Empty once a final flush has written everything.
 */
export async function changesLeft(redis: AnyRedis, prefix: string): Promise<string[]> {
  const left: string[] = [];
  for (const key of await scanKeys(redis, prefix)) {
    if (key.endsWith(':batch')) left.push(key);
    else if (key.endsWith(':pending') || key.endsWith(':unknown')) {
      // Fields starting with '#' are the hash's own (when changes were given back, how it is laid out).
      const fields = (await redis.hkeys(key)).filter((field) => !field.startsWith('#'));
      left.push(...fields.map((field) => `${key} ${field}`));
    }
  }
  return left;
}
