import type { CountedEntity, CounterField } from './counted-entity.js';
import type { Granularity } from './time-bucket.js';

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

/**
 * The bucket changes of a batch, one per place: place b adds `deltas[b]` to the bucket of granularity
 * `granularities[b]` that starts at `starts[b]` (Unix seconds, UTC), of counter `counters[b]` of the row
 * whose id (as the database binds it) is `ids[b]`. A batch holds at most one place per bucket.
 */
export interface BucketDeltas {
  ids: Array<string | number>;
  counters: CounterField[];
  granularities: Granularity[];
  starts: number[];
  deltas: number[];
}
