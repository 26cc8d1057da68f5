import { CounterError } from './counter.error.js';

/**
 * Redis cannot be reached (nothing was sent), did not answer in time (the change may or may not have
 * been made, as with any timed-out command) or is out of memory (nothing was applied); `outcomeUnknown`
 * and the message say which.
 */
export class CounterStoreUnavailableError extends CounterError {
  /**
   * True when the command was sent and no answer came: it may or may not have been applied. False when
   * it was not applied (never sent, or refused). @default false
   */
  readonly outcomeUnknown: boolean;

  constructor(message: string, options?: ErrorOptions & { outcomeUnknown?: boolean }) {
    super(message, options);
    this.outcomeUnknown = options?.outcomeUnknown ?? false;
  }
}
