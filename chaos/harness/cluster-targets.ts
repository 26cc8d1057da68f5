// Which Redis Cluster slot holds each target, computed as the library computes it (the shard of the
// encoded id, the shard's hash tag), so that a scenario knows which targets a failing master takes down.
import type { DataSource } from 'typeorm';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { Article, Badge, Remark } from '../../test/fixtures/entities.js';
import { Topic } from '../../test/fixtures/sourced-entities.js';
import { Clip } from '../worker/clip.entity.js';
import type { AnyRedis } from '../../support/redis.js';
import { targetKey, type CounterTarget } from './counter-targets.js';

const ENTITY_CLASSES = { Article, Remark, Badge, Topic, Clip } as const;

export interface TargetSlots {
  /** Slot of a target's row hash (and of its shard's keys). */
  slotOf(target: CounterTarget): number;
  /** Its row hash key. */
  rowKeyOf(target: CounterTarget): string;
}

/** The entity key is the table path of the workers' data source, which has the observer's options. */
export function targetSlots(observer: DataSource, prefix: string, shards: number): TargetSlots {
  const keys = new CounterKeys(prefix, shards);
  const shardOf = (target: CounterTarget) => {
    const encodedId = keys.encodeId(String(target.id));
    const entityKey = observer.getMetadata(ENTITY_CLASSES[target.entity]).tablePath;
    return { shard: keys.shard(entityKey, keys.shardOf(encodedId)), encodedId };
  };
  return {
    slotOf: (target) => shardOf(target).shard.slot,
    rowKeyOf: (target) => {
      const { shard, encodedId } = shardOf(target);
      return shard.row(encodedId);
    },
  };
}

/**
 * Targets whose row hash is not in Redis although they were counted: proof that `targetSlots` computes
 * the keys the workers write (empty when it does).
 */
export async function rowKeysMissing(redis: AnyRedis, slots: TargetSlots, counted: CounterTarget[]): Promise<string[]> {
  const missing: string[] = [];
  for (const target of counted) {
    if ((await redis.exists(slots.rowKeyOf(target))) === 0) missing.push(targetKey(target));
  }
  return missing;
}
