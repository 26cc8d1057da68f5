import { CounterError } from './counter.error.js';

/**
 * The id is empty, not of the primary key's type or outside its range, or a string its column cannot
 * hold as sent (a lone surrogate, NUL, longer than its declared length).
 */
export class InvalidCounterIdError extends CounterError {}
