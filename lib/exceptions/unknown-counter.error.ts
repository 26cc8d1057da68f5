import { MESSAGES } from '../counter.messages.js';
import { CounterError } from './counter.error.js';

/** The entity has no counter of that name. */
export class UnknownCounterError extends CounterError {
  /** The entity's class name. */
  readonly entity?: string;
  /** The counter name asked for. */
  readonly counter?: string;

  constructor(message: string, options?: ErrorOptions & { entity?: string; counter?: string }) {
    super(message, options);
    if (options?.entity !== undefined) this.entity = options.entity;
    if (options?.counter !== undefined) this.counter = options.counter;
  }

  /** `entity` has no counter named `counter`; `known` are the names it has. */
  static of(entity: string, counter: string, known: readonly string[]): UnknownCounterError {
    return new UnknownCounterError(MESSAGES.unknownCounter(entity, counter, known), { entity, counter });
  }
}
