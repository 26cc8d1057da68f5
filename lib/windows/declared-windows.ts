import { InvalidCounterDefinitionError } from '../exceptions/invalid-counter-definition.error.js';
import { GRANULARITIES, GRANULARITY_CODE, type Granularity } from '../model/time-bucket.js';
import { WINDOW_MESSAGES } from './window.messages.js';

/** The length of CounterBucket's "counter" column. */
const BUCKET_COUNTER_LENGTH = 64;

/**
 * A counter's declared `windows`, finest first; throws InvalidCounterDefinitionError for anything but
 * an array of distinct granularities, or for a windowed counter whose name its bucket rows cannot hold.
 */
export function declaredWindows(entity: string, counter: string, windows: unknown): Granularity[] {
  if (windows === undefined) return [];
  const valid =
    Array.isArray(windows) &&
    windows.every((window) => GRANULARITIES.includes(window as Granularity)) &&
    new Set(windows).size === windows.length;
  if (!valid) throw new InvalidCounterDefinitionError(WINDOW_MESSAGES.badWindows(entity, counter, windows));
  if (windows.length > 0 && counter.length > BUCKET_COUNTER_LENGTH) {
    throw new InvalidCounterDefinitionError(
      WINDOW_MESSAGES.windowedNameTooLong(entity, counter, BUCKET_COUNTER_LENGTH),
    );
  }
  return GRANULARITIES.filter((granularity) => windows.includes(granularity));
}

/**
 * A counter's name as the change and claim scripts take it (`view_count@h`; see CounterField.scriptName):
 * only its finest granularity's buckets are kept by change, the coarser ones are made of them.
 */
export function scriptNameOf(counter: string, windows: readonly Granularity[]): string {
  if (windows.length === 0) return counter;
  return `${counter}@${GRANULARITY_CODE[windows[0]]}`;
}
