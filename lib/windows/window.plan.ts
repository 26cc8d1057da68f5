import { CounterWindowBeyondRetentionError } from '../exceptions/counter-window-beyond-retention.error.js';
import { InvalidCounterOptionError } from '../exceptions/invalid-counter-option.error.js';
import type { CounterWindow } from '../interfaces/counter-window.interface.js';
import { bucketStart, GRANULARITY_SECONDS, type BucketRange, type Granularity } from '../model/time-bucket.js';
import { WINDOW_MESSAGES } from './window.messages.js';

/**
 * The window in Unix seconds, widened to whole buckets of `granularity`: every bucket that overlaps
 * [since, until) is in it. Throws InvalidCounterOptionError for a bound that is not a time, or an empty
 * window.
 */
export function windowBounds(granularity: Granularity, window: CounterWindow, nowMs: number): BucketRange {
  const since = timeOf('since', window.since);
  const until = window.until === undefined ? nowMs : timeOf('until', window.until);
  if (until <= since) throw new InvalidCounterOptionError('until', WINDOW_MESSAGES.emptyWindow(since, until));
  const length = GRANULARITY_SECONDS[granularity];
  return {
    granularity,
    from: Math.floor(since / 1_000 / length) * length,
    to: Math.ceil(until / 1_000 / length) * length,
  };
}

/**
 * The buckets that add up to the window `bounds` (in buckets of the finest of `windows`, finest first):
 * whole days in days where the counter keeps them, the hours before and after in hours.
 */
export function coveringRanges(windows: readonly Granularity[], bounds: BucketRange): BucketRange[] {
  const { from, to } = bounds;
  if (windows[0] !== 'hour' || !windows.includes('day')) return [{ granularity: windows[0], from, to }];
  const day = GRANULARITY_SECONDS.day;
  const firstDay = Math.ceil(from / day) * day;
  const endOfDays = Math.floor(to / day) * day;
  if (firstDay >= endOfDays) return [{ granularity: 'hour', from, to }];
  const ranges: BucketRange[] = [{ granularity: 'hour', from, to: firstDay }];
  ranges.push({ granularity: 'day', from: firstDay, to: endOfDays }, { granularity: 'hour', from: endOfDays, to });
  return ranges.filter((range) => range.from < range.to);
}

/**
 * The stored buckets that hold the changes of `ranges` (contiguous, see `coveringRanges`), finest first:
 * changes go to buckets of the finest granularity only (CounterField.scriptName), and pruning rolls those
 * past their retention up into the coarser one (RollingUpkeep), so a coarser range is its own rows plus
 * the finest ones over the same span. A single statement sees each change in exactly one of them.
 */
export function storedRanges(windows: readonly Granularity[], ranges: readonly BucketRange[]): BucketRange[] {
  const finest: BucketRange = {
    granularity: windows[0],
    from: Math.min(...ranges.map((range) => range.from)),
    to: Math.max(...ranges.map((range) => range.to)),
  };
  return [finest, ...ranges.filter((range) => range.granularity !== windows[0])];
}

/**
 * Throws CounterWindowBeyondRetentionError when a range starts before the oldest bucket of its
 * granularity the flush keeps: the one that holds the instant `retentionMs` before now. So a window as
 * long as the retention is answered wherever it starts (pruning keeps one bucket more, for a window
 * checked a moment ago: RollingUpkeep).
 */
export function checkRetention(
  ranges: readonly BucketRange[],
  retentionMs: Readonly<Record<Granularity, number>>,
  nowMs: number,
): void {
  for (const { granularity, from } of ranges) {
    const keptFrom = oldestKeptStart(granularity, retentionMs[granularity], nowMs);
    if (from >= keptFrom) continue;
    const hint =
      granularity === 'hour' && ranges.some((range) => range.granularity === 'day')
        ? WINDOW_MESSAGES.hourEdgeHint()
        : WINDOW_MESSAGES.keepLongerHint(granularity);
    const keptSince = new Date(keptFrom * 1_000);
    throw new CounterWindowBeyondRetentionError(
      `bucketRetentionMs.${granularity}`,
      keptSince,
      WINDOW_MESSAGES.beyondRetention(granularity, retentionMs[granularity], keptSince, hint),
    );
  }
}

/**
 * The oldest start (Unix seconds) a bucket of `granularity` may have in a window at `nowMs`: that of the
 * bucket holding the instant `retentionMs` ago. Pruning keeps one bucket more (RollingUpkeep).
 */
export function oldestKeptStart(granularity: Granularity, retentionMs: number, nowMs: number): number {
  return bucketStart(granularity, (nowMs - retentionMs) / 1_000);
}

/** The starts (Unix seconds) of the buckets of `range`, in order. */
export function bucketStarts({ granularity, from, to }: BucketRange): number[] {
  const length = GRANULARITY_SECONDS[granularity];
  const starts: number[] = [];
  for (let start = from; start < to; start += length) starts.push(start);
  return starts;
}

/** A window's bound in ms. */
function timeOf(option: 'since' | 'until', value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw new InvalidCounterOptionError(option, WINDOW_MESSAGES.notADate(option, value));
  }
  return ms;
}
