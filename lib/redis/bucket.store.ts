import { GRANULARITY_CODE, GRANULARITY_SECONDS, type BucketRange } from '../model/time-bucket.js';
import type { ShardKeys } from './counter.keys.js';
import { scriptCall, type ScriptRunner } from './script.runner.js';

/** A bucket's changes that the database may not have yet. */
export interface WaitingBucketChange {
  /** Its change pending or given back, which no database has. */
  waiting: number;
  /** Its change in the batch in flight, which the database has once the ledger has the batch. */
  inFlight: number;
}

/** The changes of a row's buckets that wait in a shard (see bucket-read.lua.ts). */
export interface WaitingBucketChanges {
  /**
   * The shard's generation, batch id and the batch's number of fields, one text: it moves with every
   * step of a flush (a claim, an acknowledgement, a give-back of some of the batch's changes).
   */
  version: string;
  /** The shard's batch in flight ('' if none). */
  batchId: string;
  /** By bucket start, the buckets with a change. */
  changes: Map<number, WaitingBucketChange>;
}

/** The fields of a row's buckets of one counter and granularity begin with this (buckets.lua.ts). */
function bucketFieldPrefix(encodedId: string, counter: string, range: BucketRange): string {
  return `${encodedId} ${counter}@${GRANULARITY_CODE[range.granularity]}`;
}

/** Reads the changes of windowed counters' buckets that wait in Redis. */
export class BucketStore {
  constructor(private readonly runner: ScriptRunner) {}

  /**
   * The changes waiting in `shard` of the row's buckets of `counter` in `range`, with the shard's
   * version read at the same instant. Without a range, only the version.
   */
  read(shard: ShardKeys, encodedId: string, counter: string, range?: BucketRange): Promise<WaitingBucketChanges> {
    const keys = [shard.generation, shard.batch, shard.pending, shard.unknown];
    const args = range
      ? [bucketFieldPrefix(encodedId, counter, range), GRANULARITY_SECONDS[range.granularity], range.from, range.to]
      : ['', 1, 0, 0];
    return this.runner.sendInTurn(
      scriptCall('nestjsCounterBucketRead', shard.slot, keys, args, (reply) => {
        const [generation, batchId, batchFields, ...values] = reply as Array<string | number>;
        const changes = new Map<number, WaitingBucketChange>();
        for (let at = 0; at < values.length; at += 3) {
          changes.set(Number(values[at]), { waiting: Number(values[at + 1]), inFlight: Number(values[at + 2]) });
        }
        const version = `${String(generation)} ${String(batchId)} ${String(batchFields)}`;
        return { version, batchId: String(batchId), changes };
      }),
    );
  }
}
