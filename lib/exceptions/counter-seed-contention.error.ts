import { MESSAGES } from '../counter.messages.js';
import { CounterError } from './counter.error.js';

/** A row could not be loaded into Redis because flushes kept changing it; retrying the call is safe. */
export class CounterSeedContentionError extends CounterError {
  /** The entity's class name. */
  declare readonly entity?: string;
  /** The row's id as text: 17 and '17' name one row, a UUID is lowercased. */
  declare readonly id?: string;

  /** The row `id` of `entity` could not be loaded. */
  static of(entity: string, id: string): CounterSeedContentionError {
    return new CounterSeedContentionError(MESSAGES.seedContended(entity, id), { entity, id });
  }
}
