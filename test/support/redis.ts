import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A key prefix no other test uses, so tests can run in any order and in parallel. */
export const uniquePrefix = (label: string) => `t-${label}-${randomBytes(4).toString('hex')}`;

export function testRedis(): Redis {
  return new Redis(REDIS_URL, { protocol: 2 });
}

/** Every key under a prefix, with its full content: for asserting that nothing changed. */
export async function snapshot(redis: Redis, prefix: string): Promise<Record<string, unknown>> {
  const keys = (await scanKeys(redis, prefix)).sort();
  const result: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await redis.type(key);
    result[key] =
      type === 'hash'
        ? await redis.hgetall(key)
        : type === 'set'
          ? (await redis.smembers(key)).sort()
          : await redis.get(key);
  }
  return result;
}

export async function scanKeys(redis: Redis, prefix: string): Promise<string[]> {
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
export async function keysEndingWith(redis: Redis, prefix: string, suffix: string): Promise<string[]> {
  return (await scanKeys(redis, prefix)).filter((key) => key.endsWith(suffix));
}

export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  const keys = await scanKeys(redis, prefix);
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
}
