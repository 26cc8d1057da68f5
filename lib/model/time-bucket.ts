import type { CounterGranularity } from '../interfaces/counter-window.interface.js';

export type Granularity = CounterGranularity;

export const GRANULARITIES: readonly Granularity[] = ['hour', 'day'];

export const GRANULARITY_SECONDS: Readonly<Record<Granularity, number>> = { hour: 3_600, day: 86_400 };

/** The letter naming a granularity in Redis field names: `<encoded id> <counter>@h<bucket start>`. */
export const GRANULARITY_CODE: Readonly<Record<Granularity, string>> = { hour: 'h', day: 'd' };

/** Buckets of one granularity whose starts are in [from, to) (Unix seconds, multiples of its length). */
export interface BucketRange {
  granularity: Granularity;
  from: number;
  to: number;
}

/** How a bucket is named among a row's buckets of one counter: `hour 1795863600`. */
export function bucketKey(granularity: Granularity, start: number): string {
  return `${granularity} ${start}`;
}

/** The start of the bucket of `granularity` that holds `seconds` (Unix seconds, UTC). */
export function bucketStart(granularity: Granularity, seconds: number): number {
  const length = GRANULARITY_SECONDS[granularity];
  return Math.floor(seconds / length) * length;
}
