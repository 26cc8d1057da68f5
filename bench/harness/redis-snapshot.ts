import type { Cluster, Redis } from 'ioredis';
import { COUNTER_DEFAULTS } from '../../lib/counter.constants.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { mastersOf } from './redis-targets.js';

/** Every key under a prefix as `DUMP` serialised it, with its remaining time to live. */
export interface RedisSnapshot {
  keys: Array<{ key: string; pttl: number; dump: Buffer }>;
}

const PIPELINE = 1_000;

/**
 * Copies every key under `prefix`, opaque to what the keys hold: restoring it puts Redis back exactly
 * as it was, so a setup that took minutes of increments can be replayed for the next database.
 */
export async function snapshotKeys(client: Redis | Cluster, prefix: string): Promise<RedisSnapshot> {
  const snapshot: RedisSnapshot = { keys: [] };
  for (const node of await mastersOf(client)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', PIPELINE);
      cursor = next;
      const pipeline = node.pipeline();
      for (const key of keys) pipeline.pttl(key).dumpBuffer(key);
      const replies = (await pipeline.exec()) ?? [];
      keys.forEach((key, index) => {
        const [[ttlError, pttl], [dumpError, dump]] = [replies[index * 2], replies[index * 2 + 1]];
        if (ttlError || dumpError) throw ttlError ?? dumpError;
        // A key that expired between SCAN and DUMP is simply not part of the copy.
        if (dump !== null) snapshot.keys.push({ key, pttl: Number(pttl), dump: dump as Buffer });
      });
    } while (cursor !== '0');
  }
  return snapshot;
}

/**
 * Writes the snapshot's keys back (replacing what is there), with their times to live, under the names
 * `rename` gives them. Keys for which `keep` is true are only written where missing.
 */
export async function restoreKeys(
  client: Redis,
  snapshot: RedisSnapshot,
  rename: (key: string) => string,
  keep: (key: string) => boolean = () => false,
): Promise<void> {
  for (let start = 0; start < snapshot.keys.length; start += PIPELINE) {
    const pipeline = client.pipeline();
    const kept: boolean[] = [];
    for (const { key, pttl, dump } of snapshot.keys.slice(start, start + PIPELINE)) {
      // PTTL is -1 for a key without expiry; RESTORE takes 0 for that. Without REPLACE, RESTORE refuses
      // a key that exists (BUSYKEY), which leaves it as it is.
      kept.push(keep(key));
      if (kept[kept.length - 1]) pipeline.restore(rename(key), Math.max(pttl, 0), dump);
      else pipeline.restore(rename(key), Math.max(pttl, 0), dump, 'REPLACE');
    }
    const replies = (await pipeline.exec()) ?? [];
    replies.forEach(([error], index) => {
      if (error && !(kept[index] && error.message.startsWith('BUSYKEY'))) throw error;
    });
  }
}

/**
 * Moves counter keys from one set of entity keys (table paths) to another: every key of a shard starts
 * with its slot group's hash tag, which holds the entity key, and a row's shard depends on its id alone.
 * `from[i]` becomes `to[i]`.
 */
export function entityKeyRenamer(
  prefix: string,
  shards: number,
  from: string[],
  to: string[],
): (key: string) => string {
  const keys = new CounterKeys(prefix, shards, COUNTER_DEFAULTS.slotsPerEntity);
  const tags = new Map<string, string>();
  from.forEach((entityKey, index) => {
    const targets = keys.shardsOf(to[index]);
    keys.shardsOf(entityKey).forEach((shard, number) => tags.set(shard.slotTag, targets[number].slotTag));
  });
  return (key) => {
    const end = key.indexOf('}') + 1;
    const tag = tags.get(key.slice(0, end));
    if (tag === undefined) throw new Error(`${key} belongs to no shard of ${from.join(', ')}`);
    return tag + key.slice(end);
  };
}
