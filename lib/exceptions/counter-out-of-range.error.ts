import { CounterError } from './counter.error.js';

/** The change would take the counter outside its `@Counted()` bounds or the safe integer range; nothing was changed. */
export class CounterOutOfRangeError extends CounterError {}
