import { CounterError } from './counter.error.js';

/** The entity has no counter of that name. */
export class UnknownCounterError extends CounterError {}
