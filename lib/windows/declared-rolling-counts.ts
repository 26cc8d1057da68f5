import { CounterConfigurationError } from '../exceptions/counter-configuration.error.js';
import { InvalidCounterDefinitionError } from '../exceptions/invalid-counter-definition.error.js';
import type { RollingCountPropertyMetadata } from '../interfaces/counted-options.interface.js';
import type { CounterField, RollingCountField } from '../model/counted-entity.js';
import { GRANULARITY_SECONDS, type Granularity } from '../model/time-bucket.js';
import { parseRolling } from './declared-rolling.js';
import { WINDOW_MESSAGES } from './window.messages.js';

/** What a rolling count's declaration is checked against: its entity's counters and columns. */
export interface RollingCountContext {
  entity: string;
  counters: readonly CounterField[];
  isColumn: (propertyName: string) => boolean;
  bucketRetentionMs: Readonly<Record<Granularity, number>>;
}

/**
 * An entity's `@RollingCount()` properties, each bound to its counter's declared rolling window of that
 * length. Throws InvalidCounterDefinitionError for a column, a property decorated twice, an unknown or
 * unwindowed counter, a length that is not a whole number of the counter's finest buckets or that the
 * counter does not declare in `rolling`; CounterConfigurationError for one longer than those buckets are
 * kept (checked before the declaration, whose own check would refuse it too).
 */
export function declaredRollingCounts(
  declared: readonly RollingCountPropertyMetadata[],
  context: RollingCountContext,
): RollingCountField[] {
  const { entity } = context;
  const fields: RollingCountField[] = [];
  for (const { propertyName, counterName, window: length } of declared) {
    const refuse = (message: string) => new InvalidCounterDefinitionError(message, { entity, counter: counterName });
    if (context.isColumn(propertyName)) throw refuse(WINDOW_MESSAGES.rollingCountIsColumn(entity, propertyName));
    if (fields.some((field) => field.propertyName === propertyName)) {
      throw refuse(WINDOW_MESSAGES.rollingCountTwice(entity, propertyName));
    }
    const counter = context.counters.find((field) => field.name === counterName);
    if (!counter) {
      const known = context.counters.map((field) => field.name);
      throw refuse(WINDOW_MESSAGES.rollingCountUnknownCounter(entity, propertyName, counterName, known));
    }
    if (counter.windows.length === 0) {
      throw refuse(WINDOW_MESSAGES.rollingCountNotWindowed(entity, propertyName, counterName));
    }
    const finest = counter.windows[0];
    const window = parseRolling(length);
    if (!window || window.seconds % GRANULARITY_SECONDS[finest] !== 0) {
      throw refuse(WINDOW_MESSAGES.rollingCountBadWindow(entity, propertyName, length, finest));
    }
    const retentionMs = context.bucketRetentionMs[finest];
    if (window.seconds * 1_000 > retentionMs) {
      throw new CounterConfigurationError(
        WINDOW_MESSAGES.rollingCountBeyondRetention(entity, propertyName, window.name, finest, retentionMs),
        { entity, counter: counterName },
      );
    }
    // '1d' and '24h' are the same window: its sums are kept under the name the counter declares.
    const rolling = counter.rolling.find((kept) => kept.seconds === window.seconds);
    if (!rolling) {
      const names = counter.rolling.map((kept) => kept.name);
      throw refuse(WINDOW_MESSAGES.rollingCountNotDeclared(entity, propertyName, counterName, window.name, names));
    }
    fields.push({ propertyName, counter, window: rolling });
  }
  return fields;
}
