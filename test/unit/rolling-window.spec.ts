import { describe, expect, it } from 'vitest';
import { InvalidCounterDefinitionError } from '../../lib/index.js';
import { rollingFrom } from '../../lib/model/rolling-window.js';
import { declaredRolling } from '../../lib/windows/declared-rolling.js';
import { windowBounds } from '../../lib/windows/window.plan.js';

const HOUR = 3_600;
const DAY = 86_400;
/** 2026-11-27 00:00 UTC, in Unix seconds. */
const DAY_27 = Date.UTC(2026, 10, 27) / 1_000;

describe('a rolling window', () => {
  it('starts at the oldest bucket that overlaps [now - length, now), as count’s window does', () => {
    const day = { name: '24h', seconds: DAY };
    const now = (DAY_27 + 10 * HOUR + 1_800) * 1_000;
    // 10:30: the hours from 10:00 the day before to 10:00, 25 of them.
    expect(rollingFrom(day, 'hour', now)).toBe(DAY_27 - DAY + 10 * HOUR);
    // On the hour, 24 of them.
    expect(rollingFrom(day, 'hour', (DAY_27 + 10 * HOUR) * 1_000)).toBe(DAY_27 - DAY + 10 * HOUR);
    expect(rollingFrom({ name: '2d', seconds: 2 * DAY }, 'day', now)).toBe(DAY_27 - 2 * DAY);
    for (const nowMs of [now, now + 1, (DAY_27 + 23 * HOUR + 3_599) * 1_000, DAY_27 * 1_000]) {
      for (const [window, granularity] of [
        [{ name: '3h', seconds: 3 * HOUR }, 'hour'],
        [day, 'hour'],
        [{ name: '7d', seconds: 7 * DAY }, 'hour'],
        [{ name: '2d', seconds: 2 * DAY }, 'day'],
      ] as const) {
        const since = nowMs - window.seconds * 1_000;
        expect(rollingFrom(window, granularity, nowMs)).toBe(windowBounds(granularity, { since }, nowMs).from);
      }
    }
  });

  it('is declared as <n>h or <n>d, a whole number of the finest granularity', () => {
    expect(declaredRolling('Post', 'views', undefined, ['hour'])).toEqual([]);
    expect(declaredRolling('Post', 'views', ['24h', '7d'], ['hour', 'day'])).toEqual([
      { name: '24h', seconds: DAY },
      { name: '7d', seconds: 7 * DAY },
    ]);
    expect(declaredRolling('Post', 'views', ['48h'], ['day'])).toEqual([{ name: '48h', seconds: 2 * DAY }]);
    for (const [rolling, windows] of [
      [['36h'], ['day']],
      [['1h', '60h', '0d'], ['hour']],
      [['1.5h'], ['hour']],
      [['24h', '1d'], ['hour']],
      [[24], ['hour']],
      [['24h'], []],
      ['24h', ['hour']],
    ] as const) {
      expect(() => declaredRolling('Post', 'views', rolling, windows)).toThrow(InvalidCounterDefinitionError);
    }
  });
});
