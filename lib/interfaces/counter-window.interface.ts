/** The lengths of time a windowed counter keeps its changes by (`@Counted({ windows })`). */
export type CounterGranularity = 'hour' | 'day';

/**
 * A window of time for `count`, `series` and `top`: from `since` up to `until` (exclusive), each a Date
 * or a time in ms. Windows are made of whole buckets: every bucket that overlaps the two is in it.
 */
export interface CounterWindow {
  since: Date | number;
  /** @default now */
  until?: Date | number;
}

/** A window of `series`, and the buckets to give it in. */
export interface CounterSeriesWindow extends CounterWindow {
  granularity: CounterGranularity;
}

/** A bucket's value in a series: when it starts (UTC), and the counter's net change in it. */
export interface CounterBucketValue {
  start: Date;
  value: number;
}

/** A window of `top`, and how many rows to give. */
export interface CounterTopWindow extends CounterWindow {
  /** The most rows to give: a whole number from 1 to 1000. */
  limit: number;
}

/** A row of `top`: its id (a number for integer keys that fit one), and the counter's net change in the window. */
export interface CounterTopRow {
  id: string | number;
  value: number;
}
