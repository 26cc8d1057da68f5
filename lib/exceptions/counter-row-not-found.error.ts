import { MESSAGES } from '../counter.messages.js';
import { CounterError } from './counter.error.js';

/** The row does not exist in the database. */
export class CounterRowNotFoundError extends CounterError {
  /** The entity's class name. */
  declare readonly entity?: string;
  /** The row's id as text: 17 and '17' name one row, a UUID is lowercased. */
  declare readonly id?: string;

  /** The row `id` of `entity` is not in the database. */
  static of(entity: string, id: string): CounterRowNotFoundError {
    return new CounterRowNotFoundError(MESSAGES.rowNotFound(entity, id), { entity, id });
  }
}
