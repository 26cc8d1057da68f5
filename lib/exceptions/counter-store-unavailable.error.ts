import { CounterError } from './counter.error.js';

/** Redis cannot be reached or did not answer in time; the change was not made. */
export class CounterStoreUnavailableError extends CounterError {}
