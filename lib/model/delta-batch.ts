import type { CountedEntity, CounterField } from './counted-entity.js';
import type { BucketDeltas } from './time-bucket.js';

/**
 * Rows of a batch, column by column: row r's id as bound in SQL is `ids[r]`, and its delta for column c
 * `deltas[r * width + c]`, width being the number of columns updated.
 */
export interface DeltaRows {
  ids: Array<string | number>;
  /** A transaction's merged rows hold theirs in a Float64Array (see merge-batches.ts). */
  deltas: number[] | Float64Array;
}

/** A batch as the database sees it: its rows (in any order), one delta per column in `counters`. */
export interface DeltaBatch {
  batchId: string;
  entity: CountedEntity;
  shard: number;
  counters: CounterField[];
  rows: DeltaRows;
  /** The changes of its windowed counters' buckets; absent when it has none. */
  buckets?: BucketDeltas;
}
