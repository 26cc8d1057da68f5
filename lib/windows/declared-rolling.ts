import { InvalidCounterDefinitionError } from '../exceptions/invalid-counter-definition.error.js';
import type { RollingWindow } from '../model/rolling-window.js';
import { GRANULARITY_SECONDS, type Granularity } from '../model/time-bucket.js';
import { WINDOW_MESSAGES } from './window.messages.js';

/** `24h`, `7d`: a whole number of hours or days, without a leading zero. */
const ROLLING_NAME = /^([1-9]\d{0,5})([hd])$/;
const UNIT_SECONDS: Readonly<Record<string, number>> = { h: GRANULARITY_SECONDS.hour, d: GRANULARITY_SECONDS.day };

/**
 * A counter's declared `rolling` windows, in the order given; throws InvalidCounterDefinitionError for
 * anything but an array of distinct `<n>h` or `<n>d`, each a whole number of buckets of `windows[0]`
 * (the counter's finest granularity), or for rolling windows on a counter without windows.
 */
export function declaredRolling(
  entity: string,
  counter: string,
  rolling: unknown,
  windows: readonly Granularity[],
): RollingWindow[] {
  if (rolling === undefined) return [];
  if (windows.length === 0)
    throw new InvalidCounterDefinitionError(WINDOW_MESSAGES.rollingWithoutWindows(entity, counter));
  const finest = GRANULARITY_SECONDS[windows[0]];
  const parsed = Array.isArray(rolling) ? rolling.map(parseRolling) : [undefined];
  const valid =
    parsed.every((window) => window !== undefined && window.seconds % finest === 0) &&
    new Set(parsed.map((window) => window!.seconds)).size === parsed.length;
  if (!valid) throw new InvalidCounterDefinitionError(WINDOW_MESSAGES.badRolling(entity, counter, rolling, windows[0]));
  return parsed as RollingWindow[];
}

/** A rolling window's length as declared (`'24h'`, `'7d'`); undefined for anything else. */
export function parseRolling(name: unknown): RollingWindow | undefined {
  const match = typeof name === 'string' ? ROLLING_NAME.exec(name) : null;
  return match ? { name: match[0], seconds: Number(match[1]) * UNIT_SECONDS[match[2]] } : undefined;
}
