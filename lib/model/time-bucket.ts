import type { CounterField } from './counted-entity.js';

/** The lengths of time a windowed counter keeps its changes by (`@Counted({ windows })`), finest first. */
export type Granularity = 'hour' | 'day';

export const GRANULARITIES: readonly Granularity[] = ['hour', 'day'];

export const GRANULARITY_SECONDS: Readonly<Record<Granularity, number>> = { hour: 3_600, day: 86_400 };

/** The letter naming a granularity in Redis field names: `<encoded id> <counter>@h<bucket start>`. */
export const GRANULARITY_CODE: Readonly<Record<Granularity, string>> = { hour: 'h', day: 'd' };

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

/** Buckets of one granularity whose starts are in [from, to) (Unix seconds, multiples of its length). */
export interface BucketRange {
  granularity: Granularity;
  from: number;
  to: number;
}

/** The start of the bucket of `granularity` that holds `seconds` (Unix seconds, UTC). */
export function bucketStart(granularity: Granularity, seconds: number): number {
  const length = GRANULARITY_SECONDS[granularity];
  return Math.floor(seconds / length) * length;
}
