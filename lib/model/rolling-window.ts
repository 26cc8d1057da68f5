import { bucketStart, type Granularity } from './time-bucket.js';

/** A rolling window a windowed counter keeps a sum of (`@Counted({ rolling: ['24h'] })`). */
export interface RollingWindow {
  /** As declared: `<n>h` or `<n>d`. */
  name: string;
  /** Its length. */
  seconds: number;
}

/**
 * The start (Unix seconds) of the oldest bucket of `granularity` (the counter's finest) that the window
 * counts at `nowMs`: it counts every bucket that overlaps [now - length, now), as `count` with
 * `since: now - length` does (25 hours for '24h' but on the hour: the current one and the 24 before).
 */
export function rollingFrom(window: RollingWindow, granularity: Granularity, nowMs: number): number {
  return bucketStart(granularity, nowMs / 1_000 - window.seconds);
}
