import { MESSAGES } from '../counter.messages.js';
import { CounterError } from './counter.error.js';

/** The row does not exist in the database. */
export class CounterRowNotFoundError extends CounterError {
  /** The entity's class name. */
  readonly entity?: string;
  /** The row's id as text: 17 and '17' name one row, a UUID is lowercased. */
  readonly id?: string;

  constructor(message: string, options?: ErrorOptions & { entity?: string; id?: string }) {
    super(message, options);
    if (options?.entity !== undefined) this.entity = options.entity;
    if (options?.id !== undefined) this.id = options.id;
  }

  /** The row `id` of `entity` is not in the database. */
  static of(entity: string, id: string): CounterRowNotFoundError {
    return new CounterRowNotFoundError(MESSAGES.rowNotFound(entity, id), { entity, id });
  }
}
