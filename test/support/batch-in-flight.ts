import type { INestApplicationContext } from '@nestjs/common';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { toDeltaBatch } from '../../lib/flush/claimed-batch.js';
import type { EntityClass } from '../../lib/interfaces/entity-class.interface.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';

/** A batch claimed by hand, to be written and acknowledged a step at a time, as a flush would. */
export interface BatchInFlight {
  /** Writes the batch to the database (the flush's transaction). */
  write(): ReturnType<CounterDatabase['applyBatches']>;
  /** Acknowledges it in Redis; whether the claim was still this batch's. */
  ack(): Promise<boolean>;
}

/** Claims the shard that holds `id`'s row of `entity` as batch `batchId`; throws when it has nothing to claim. */
export async function claimShardOf(
  app: INestApplicationContext,
  entity: EntityClass,
  id: string | number,
  batchId: string,
): Promise<BatchInFlight> {
  const counted = app.get(CounterRegistry).get(entity);
  const keys = app.get(CounterKeys);
  const shard = keys.shard(counted.key, keys.shardOf(keys.encodeId(String(id))));
  const store = app.get(FlushStore);
  const claim = await store.claim(shard, {
    counters: counted.scriptNames,
    numericIds: counted.numericId,
    token: 'test',
    leaseMs: 30_000,
    batchId,
    limit: 1_000,
  });
  if (claim.kind !== 'batch') throw new Error(`no batch claimed: ${claim.kind}`);
  return {
    write: () => {
      const { batch } = toDeltaBatch(keys, counted, shard.shard, claim.batchId, claim.rows);
      return app.get(CounterDatabase).applyBatches([batch]);
    },
    ack: () => store.ack(shard, claim.batchId, 'test', true, counted.scriptNames, []),
  };
}
