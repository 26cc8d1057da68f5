import { describe, expect, it } from 'vitest';
import { CounterWindowBeyondRetentionError, InvalidCounterOptionError } from '../../lib/index.js';
import {
  bucketStarts,
  checkRetention,
  coveringRanges,
  storedRanges,
  windowBounds,
} from '../../lib/windows/window.plan.js';

const HOUR = 3_600;
const DAY = 86_400;
/** 2026-11-27 00:00 UTC, in Unix seconds. */
const DAY_27 = Date.UTC(2026, 10, 27) / 1_000;
const ms = (seconds: number) => seconds * 1_000;
const RETENTION = { hour: 7 * DAY * 1_000, day: 400 * DAY * 1_000 };

describe('the buckets of a window', () => {
  it('widens a window to whole buckets of the finest granularity: every bucket it overlaps', () => {
    const since = ms(DAY_27 + 10 * HOUR + 1_799);
    const until = ms(DAY_27 + 12 * HOUR) + 1;
    expect(windowBounds('hour', { since, until }, 0)).toEqual({
      granularity: 'hour',
      from: DAY_27 + 10 * HOUR,
      to: DAY_27 + 13 * HOUR,
    });
    // An `until` on a boundary excludes the bucket it starts.
    expect(windowBounds('hour', { since: new Date(ms(DAY_27)), until: new Date(ms(DAY_27 + HOUR)) }, 0)).toEqual({
      granularity: 'hour',
      from: DAY_27,
      to: DAY_27 + HOUR,
    });
  });

  it('ends a window without `until` with the bucket that holds now', () => {
    expect(windowBounds('day', { since: ms(DAY_27) }, ms(DAY_27 + DAY + 5))).toEqual({
      granularity: 'day',
      from: DAY_27,
      to: DAY_27 + 2 * DAY,
    });
  });

  it('counts whole days in days and the hours before and after them in hours', () => {
    const bounds = { granularity: 'hour' as const, from: DAY_27 - 2 * HOUR, to: DAY_27 + 2 * DAY + 3 * HOUR };
    expect(coveringRanges(['hour', 'day'], bounds)).toEqual([
      { granularity: 'hour', from: DAY_27 - 2 * HOUR, to: DAY_27 },
      { granularity: 'day', from: DAY_27, to: DAY_27 + 2 * DAY },
      { granularity: 'hour', from: DAY_27 + 2 * DAY, to: DAY_27 + 2 * DAY + 3 * HOUR },
    ]);
    // No whole day in it: hours only; a counter that keeps one granularity: that one.
    const short = { granularity: 'hour' as const, from: DAY_27 - HOUR, to: DAY_27 + 22 * HOUR };
    expect(coveringRanges(['hour', 'day'], short)).toEqual([short]);
    expect(coveringRanges(['hour'], bounds)).toEqual([bounds]);
    const days = { granularity: 'day' as const, from: DAY_27, to: DAY_27 + 3 * DAY };
    expect(coveringRanges(['day'], days)).toEqual([days]);
  });

  it('reads the finest buckets over the whole window, and the coarser rows its whole days rolled up into', () => {
    // Hours before, whole days, hours after: every hour of the window, and the two days' rows.
    const hoursAndDays = coveringRanges(['hour', 'day'], {
      granularity: 'hour',
      from: DAY_27 - 2 * HOUR,
      to: DAY_27 + 2 * DAY + 3 * HOUR,
    });
    expect(storedRanges(['hour', 'day'], hoursAndDays)).toEqual([
      { granularity: 'hour', from: DAY_27 - 2 * HOUR, to: DAY_27 + 2 * DAY + 3 * HOUR },
      { granularity: 'day', from: DAY_27, to: DAY_27 + 2 * DAY },
    ]);
    // Whole days only, as `series` of days asks: their hours and their rows.
    const days = { granularity: 'day' as const, from: DAY_27 - 3 * DAY, to: DAY_27 };
    expect(storedRanges(['hour', 'day'], [days])).toEqual([
      { granularity: 'hour', from: DAY_27 - 3 * DAY, to: DAY_27 },
      days,
    ]);
    // No whole day in the window: its hours only.
    const hours = { granularity: 'hour' as const, from: DAY_27 - HOUR, to: DAY_27 + 22 * HOUR };
    expect(storedRanges(['hour', 'day'], coveringRanges(['hour', 'day'], hours))).toEqual([hours]);
    // A counter of one granularity: that one, over the window, with or without whole days in it.
    const longHours = { granularity: 'hour' as const, from: DAY_27 - 2 * HOUR, to: DAY_27 + 2 * DAY + 3 * HOUR };
    expect(storedRanges(['hour'], coveringRanges(['hour'], longHours))).toEqual([longHours]);
    expect(storedRanges(['hour'], coveringRanges(['hour'], hours))).toEqual([hours]);
    expect(storedRanges(['day'], coveringRanges(['day'], days))).toEqual([days]);
    const oneDay = { granularity: 'day' as const, from: DAY_27, to: DAY_27 + DAY };
    expect(storedRanges(['day'], coveringRanges(['day'], oneDay))).toEqual([oneDay]);
  });

  it('lists the starts of a range', () => {
    expect(bucketStarts({ granularity: 'hour', from: DAY_27, to: DAY_27 + 3 * HOUR })).toEqual([
      DAY_27,
      DAY_27 + HOUR,
      DAY_27 + 2 * HOUR,
    ]);
  });

  it('refuses bounds that are not times, and an empty window, naming the option', () => {
    const refusal = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return [(error as InvalidCounterOptionError).constructor, (error as InvalidCounterOptionError).option];
      }
      return undefined;
    };
    expect(refusal(() => windowBounds('hour', { since: new Date('nope') }, 0))).toEqual([
      InvalidCounterOptionError,
      'since',
    ]);
    expect(refusal(() => windowBounds('hour', { since: '2026-11-27' as never }, 0))).toEqual([
      InvalidCounterOptionError,
      'since',
    ]);
    expect(refusal(() => windowBounds('hour', { since: 0, until: Number.NaN }, 0))).toEqual([
      InvalidCounterOptionError,
      'until',
    ]);
    expect(refusal(() => windowBounds('hour', { since: 5, until: 5 }, 0))).toEqual([
      InvalidCounterOptionError,
      'until',
    ]);
  });

  it('refuses a window older than the buckets kept, naming the option and when they start', () => {
    const now = ms(DAY_27 + 10 * HOUR + 30);
    const keptHours = DAY_27 - 7 * DAY + 10 * HOUR;
    // Hours from the one holding the instant the retention reaches back to are answered (a window of
    // exactly the retention starts in it)…
    expect(() => checkRetention([{ granularity: 'hour', from: keptHours, to: DAY_27 }], RETENTION, now)).not.toThrow();
    // …one hour earlier is not.
    let refused: CounterWindowBeyondRetentionError | undefined;
    try {
      checkRetention([{ granularity: 'hour', from: keptHours - HOUR, to: DAY_27 }], RETENTION, now);
    } catch (error) {
      refused = error as CounterWindowBeyondRetentionError;
    }
    expect(refused).toBeInstanceOf(CounterWindowBeyondRetentionError);
    expect(refused?.option).toBe('bucketRetentionMs.hour');
    expect(refused?.keptSince).toEqual(new Date(ms(keptHours)));
    expect(refused?.message).toContain('bucketRetentionMs.hour is 604800000 ms');
    // Days reach further back.
    expect(() =>
      checkRetention([{ granularity: 'day', from: DAY_27 - 30 * DAY, to: DAY_27 }], RETENTION, now),
    ).not.toThrow();
    expect(() =>
      checkRetention([{ granularity: 'day', from: DAY_27 - 401 * DAY, to: DAY_27 }], RETENTION, now),
    ).toThrow(/bucketRetentionMs\.day/);
  });
});
