import type { ConvertedBatch } from './delta-batch.js';
import type { ShardWork } from './flush.run.js';

/** A shard's claimed batch on its way to the database. */
export interface ClaimedBatch extends ConvertedBatch {
  work: ShardWork;
  /** The shard's generation when claimed. */
  generation: number;
  /** Rows of the shard still dirty: when there are some, it goes back among the shards left after the ack. */
  moreRows: number;
}

/** A batch the database has, with the ids of its rows that no longer exist there. */
export interface WrittenBatch {
  claimed: ClaimedBatch;
  missingIds: Array<string | number>;
}

/** The encoded ids (as in Redis) of rows of a batch, given by their ids as in the database. */
export function encodedIdsOf({ encodedIdOf }: ClaimedBatch, ids: Array<string | number>): string[] {
  return ids.map((id) => encodedIdOf.get(String(id)) ?? String(id));
}
