import { GRANULARITY_CODE, type Granularity } from '../model/time-bucket.js';
import type { ShardKeys } from './counter.keys.js';
import { scriptCall, type ScriptRunner } from './script.runner.js';

/** The changes of some buckets of a shard that the database may not have yet (see bucket-read.lua.ts). */
export interface WaitingBucketChanges {
  /** The shard's generation ('' if it has none): moved on by every acknowledged batch. */
  generation: string;
  /** The shard's batch in flight ('' if none). */
  batchId: string;
  /** Per field asked for: its change pending or given back, which no database has. */
  waiting: number[];
  /** Per field: its change in the batch in flight, which the database has once the ledger has the batch. */
  inFlight: number[];
}

/** A bucket's field in a shard's hashes (buckets.lua.ts). */
export function bucketField(encodedId: string, counter: string, granularity: Granularity, start: number): string {
  return `${encodedId} ${counter}@${GRANULARITY_CODE[granularity]}${start}`;
}

/** Reads the changes of windowed counters' buckets that wait in Redis. */
export class BucketStore {
  constructor(private readonly runner: ScriptRunner) {}

  /** The changes of `fields` in `shard`, with its generation and batch id read at the same instant. */
  read(shard: ShardKeys, fields: string[]): Promise<WaitingBucketChanges> {
    const keys = [shard.generation, shard.batch, shard.pending, shard.unknown];
    return this.runner.sendInTurn(
      scriptCall('nestjsCounterBucketRead', shard.slot, keys, fields, (reply) => {
        const [generation, batchId, ...values] = reply as Array<string | null>;
        const waiting = fields.map((_, f) => Number(values[3 * f] ?? 0) + Number(values[3 * f + 1] ?? 0));
        const inFlight = fields.map((_, f) => Number(values[3 * f + 2] ?? 0));
        return { generation: String(generation), batchId: String(batchId), waiting, inFlight };
      }),
    );
  }
}
