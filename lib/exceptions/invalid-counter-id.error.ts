import { MESSAGES } from '../counter.messages.js';
import { CounterError } from './counter.error.js';

/**
 * The id is empty, not of the primary key's type or outside its range, or a string its column cannot
 * hold as sent (a lone surrogate, NUL, longer than its declared length).
 */
export class InvalidCounterIdError extends CounterError {
  /** The entity's class name. */
  declare readonly entity?: string;
  /** The id refused, as it was given. */
  declare readonly id?: unknown;

  /** `id` is not of the primary key's type: `expected` names it ('integers', 'UUIDs', 'non-empty strings'). */
  static notOfType(entity: string, id: unknown, expected: string): InvalidCounterIdError {
    return new InvalidCounterIdError(MESSAGES.invalidId(entity, id, expected), { entity, id });
  }

  /** The integer `id` is outside the range of the primary column's type. */
  static outOfRange(entity: string, id: unknown, range: { min: bigint; max: bigint }): InvalidCounterIdError {
    return new InvalidCounterIdError(MESSAGES.idOutOfRange(entity, id, range.min, range.max), { entity, id });
  }

  /** The text of `id` holds a lone surrogate or a NUL at `index`. */
  static notText(entity: string, id: unknown, flaw: 'surrogate' | 'nul', index: number): InvalidCounterIdError {
    return new InvalidCounterIdError(MESSAGES.idNotText(entity, flaw, index), { entity, id });
  }

  /** The text of `id`, `length` characters, is longer than its column's `maxLength`. */
  static tooLong(entity: string, id: unknown, maxLength: number, length: number): InvalidCounterIdError {
    return new InvalidCounterIdError(MESSAGES.idTooLong(entity, maxLength, length), { entity, id });
  }
}
