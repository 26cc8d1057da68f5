import { GRANULARITY_CODE, GRANULARITY_SECONDS, type BucketRange } from '../model/time-bucket.js';
import type { ShardKeys } from './counter.keys.js';
import type { Arg } from './script-commands.js';
import { scriptCall, type ScriptRunner } from './script.runner.js';

/** One counter's buckets in one window: what a rolling count adds up. */
export interface RollingCountRange extends BucketRange {
  counter: string;
}

/** A row's changes in one window that the database may not have yet. */
export interface WaitingWindowChanges {
  /** Pending or given back: in no database. */
  waiting: number;
  /** In the shard's batch in flight: in the database once the ledger has `batchId`. */
  inFlight: number;
}

/** The changes of many rows of one shard in some windows (see rolling-count-read.lua.ts). */
export interface WaitingShardChanges {
  /** The shard's generation, batch id and the batch's number of fields: moves with every flush step. */
  version: string;
  /** The shard's batch in flight ('' if none). */
  batchId: string;
  /** Per row asked for, in order, per window in order. */
  rows: WaitingWindowChanges[][];
}

/** Reads the changes of many rows' buckets that wait in a shard, a script call per shard. */
export class RollingCountStore {
  constructor(private readonly runner: ScriptRunner) {}

  /**
   * The changes waiting in `shard` of each row's buckets in each of `ranges`, with the shard's version
   * read at the same instant; with no rows, the version alone. Calls made in one turn share a pipeline.
   */
  read(
    shard: ShardKeys,
    ranges: readonly RollingCountRange[],
    encodedIds: readonly string[],
  ): Promise<WaitingShardChanges> {
    const keys = [shard.generation, shard.batch, shard.pending, shard.unknown];
    const argv: Arg[] = [ranges.length];
    for (const range of ranges) {
      argv.push(
        `${range.counter}@${GRANULARITY_CODE[range.granularity]}`,
        GRANULARITY_SECONDS[range.granularity],
        range.from,
        range.to,
      );
    }
    argv.push(...encodedIds);
    return this.runner.sendInTurn(
      scriptCall('nestjsCounterRollingCountRead', shard.slot, keys, argv, (reply) => {
        const [generation, batchId, batchFields, ...values] = reply as Array<string | number>;
        const rows = encodedIds.map((_, row) =>
          ranges.map((_, window) => {
            const at = (row * ranges.length + window) * 2;
            return { waiting: Number(values[at]), inFlight: Number(values[at + 1]) };
          }),
        );
        return {
          version: `${String(generation)} ${String(batchId)} ${String(batchFields)}`,
          batchId: String(batchId),
          rows,
        };
      }),
    );
  }
}
