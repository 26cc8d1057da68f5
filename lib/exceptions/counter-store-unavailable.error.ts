import { CounterError } from './counter.error.js';

/**
 * Redis cannot be reached (nothing was sent) or did not answer in time (the change may or may not have
 * been made, as with any timed-out command); the message says which.
 */
export class CounterStoreUnavailableError extends CounterError {}
