import { randomBytes } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { groupBy } from '../lib/collections.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A client of either topology; on a cluster, key commands are routed by slot. */
export type AnyRedis = Redis | Cluster;

/** A key prefix no other test uses, so tests can run in any order and in parallel. */
export const uniquePrefix = (label: string) => `t-${label}-${randomBytes(4).toString('hex')}`;

/**
 * The tests' own clients speak RESP2, as ioredis 5 always does (6 defaults to RESP3), so their replies
 * read the same on every supported stack. ioredis 5's types have no `protocol`: hence the cast.
 */
export const RESP2 = { protocol: 2 } as RedisOptions;

export function testRedis(): Redis {
  return new Redis(REDIS_URL, RESP2);
}

export function isCluster(redis: AnyRedis): redis is Cluster {
  return redis instanceof Cluster;
}

/**
 * The masters of a cluster, once its slot map is known: before that `nodes()` is empty, and a SCAN
 * over no node would report no keys at all, which a test would read as "nothing written".
 */
export async function masters(cluster: Cluster): Promise<Redis[]> {
  if (cluster.status !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`Redis Cluster not ready within 10 s (${cluster.status})`)),
        10_000,
      );
      cluster.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
      if (cluster.status === 'wait') cluster.connect().catch(reject);
    });
  }
  const nodes = cluster.nodes('master');
  if (nodes.length === 0) throw new Error('Redis Cluster reports no master: cannot scan its keys');
  return nodes;
}

/** Every key under a prefix, with its full content: for asserting that nothing changed. */
export async function snapshot(redis: AnyRedis, prefix: string): Promise<Record<string, unknown>> {
  const keys = (await scanKeys(redis, prefix)).sort();
  const result: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await redis.type(key);
    result[key] =
      type === 'hash'
        ? await redis.hgetall(key)
        : type === 'zset'
          ? await redis.zrange(key, '0', '-1', 'WITHSCORES')
          : type === 'set'
            ? (await redis.smembers(key)).sort()
            : await redis.get(key);
  }
  return result;
}

/** Keys under a prefix; on a cluster, from every master (each holds only its own slots). */
export async function scanKeys(redis: AnyRedis, prefix: string): Promise<string[]> {
  if (!isCluster(redis)) return scanNode(redis, prefix);
  const perMaster = await Promise.all((await masters(redis)).map((node) => scanNode(node, prefix)));
  return perMaster.flat();
}

async function scanNode(redis: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** Keys under the prefix whose name ends with `suffix` (e.g. every shard's ':batch'). */
export async function keysEndingWith(redis: AnyRedis, prefix: string, suffix: string): Promise<string[]> {
  return (await scanKeys(redis, prefix)).filter((key) => key.endsWith(suffix));
}

export async function deleteKeys(redis: AnyRedis, prefix: string): Promise<void> {
  const keys = await scanKeys(redis, prefix);
  // A cluster refuses a DEL whose keys span slots (CROSSSLOT): delete one slot at a time there.
  const groups = isCluster(redis) ? [...groupBy(keys, calculateSlot).values()] : [keys];
  for (const group of groups) {
    for (let i = 0; i < group.length; i += 500) await redis.del(...group.slice(i, i + 500));
  }
}
