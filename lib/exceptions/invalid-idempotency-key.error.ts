import { CounterError } from './counter.error.js';

/**
 * The idempotency key of a change is not a non-empty string of at most 200 characters, or is not
 * well-formed Unicode (it holds a lone surrogate).
 */
export class InvalidIdempotencyKeyError extends CounterError {}
