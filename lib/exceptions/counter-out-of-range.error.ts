import { MESSAGES } from '../counter.messages.js';
import { CounterError } from './counter.error.js';

/** The change would take the counter outside its `@Counted()` bounds or the safe integer range; nothing was changed. */
export class CounterOutOfRangeError extends CounterError {
  /** The entity's class name. */
  declare readonly entity?: string;
  /** The row's id as text: 17 and '17' name one row, a UUID is lowercased. */
  declare readonly id?: string;
  /** The counter's name. */
  declare readonly counter?: string;

  /** Changing the counter, now `current`, by `delta` would leave its bounds. */
  static ofChange(
    row: { entity: string; id: string; counter: string },
    current: number,
    delta: number,
    bounds: { min: number; max: number },
  ): CounterOutOfRangeError {
    const text = MESSAGES.outOfRange(row.entity, row.counter, current, delta, bounds.min, bounds.max);
    return new CounterOutOfRangeError(text, row);
  }

  /** The database holds a value of the counter that is not a safe integer. */
  static ofDatabaseValue(row: { entity: string; id: string; counter: string }, value: unknown): CounterOutOfRangeError {
    return new CounterOutOfRangeError(MESSAGES.databaseValueUnsafe(row.entity, row.counter, row.id, value), row);
  }
}
