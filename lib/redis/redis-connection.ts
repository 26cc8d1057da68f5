import { Logger } from '@nestjs/common';
import { Cluster, Redis } from 'ioredis';
import type { CounterRedisConnection } from '../interfaces/counter-module-options.interface.js';

export type RedisClient = Redis | Cluster;

/** The Redis client the module works with, and whether the module made it (and so must close it). */
export class CounterRedisHandle {
  constructor(
    readonly client: RedisClient,
    readonly owned: boolean,
  ) {}

  static from(connection: CounterRedisConnection, commandTimeoutMs: number): CounterRedisHandle {
    if (isRedisClient(connection)) return new CounterRedisHandle(connection, false);
    const failFast = {
      commandTimeout: commandTimeoutMs,
      // One retry at most: a caller waiting on a dead Redis gets an error, not a hang.
      maxRetriesPerRequest: 1,
    };
    const client =
      typeof connection === 'string'
        ? new Redis(connection, failFast)
        : new Redis({ ...failFast, ...connection });
    reportOutages(client);
    return new CounterRedisHandle(client, true);
  }

  async close(): Promise<void> {
    if (!this.owned || this.client.status === 'end') return;
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

export function isRedisClient(value: unknown): value is RedisClient {
  return (
    value instanceof Redis ||
    value instanceof Cluster ||
    (typeof value === 'object' &&
      value !== null &&
      typeof (value as RedisClient).evalsha === 'function' &&
      typeof (value as RedisClient).pipeline === 'function')
  );
}

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster || (client as { isCluster?: boolean }).isCluster === true;
}

/**
 * Logs a lost connection once per outage (ioredis emits an error on every reconnect attempt, and prints
 * it itself when nobody listens), and its recovery.
 */
function reportOutages(client: Redis): void {
  const logger = new Logger('CounterRedis');
  let down = false;
  client.on('error', (error: Error) => {
    if (down) return;
    down = true;
    logger.warn(`Redis connection lost (${error.message}); counters fall back to the database until it returns.`);
  });
  client.on('ready', () => {
    if (!down) return;
    down = false;
    logger.log('Redis connection restored.');
  });
}
