import { MESSAGES } from '../counter.messages.js';
import { CounterError } from './counter.error.js';

/** The class passed is not a counted entity of the module's data source. */
export class UnknownCountedEntityError extends CounterError {
  /** The name of the class passed (or the text of whatever was passed instead). */
  declare readonly entity?: string;

  /** `target` is not a counted entity. */
  static of(target: unknown): UnknownCountedEntityError {
    const entity = typeof target === 'function' && target.name ? target.name : String(target);
    return new UnknownCountedEntityError(MESSAGES.unknownEntity(entity), { entity });
  }
}
