import { CounterError } from './counter.error.js';

/** The delta is not a safe integer (NaN, Infinity, a fraction, or beyond ±(2^53-1)). */
export class InvalidCounterDeltaError extends CounterError {}
