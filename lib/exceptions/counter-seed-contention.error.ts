import { CounterError } from './counter.error.js';

/** A row could not be loaded into Redis because flushes kept changing it; retrying the call is safe. */
export class CounterSeedContentionError extends CounterError {}
