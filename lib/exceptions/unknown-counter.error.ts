import { MESSAGES } from '../counter.messages.js';
import { CounterError } from './counter.error.js';

/** The entity has no counter of that name. */
export class UnknownCounterError extends CounterError {
  /** The entity's class name. */
  declare readonly entity?: string;
  /** The counter name asked for. */
  declare readonly counter?: string;

  /** `entity` has no counter named `counter`; `known` are the names it has. */
  static of(entity: string, counter: string, known: readonly string[]): UnknownCounterError {
    return new UnknownCounterError(MESSAGES.unknownCounter(entity, counter, known), { entity, counter });
  }
}
