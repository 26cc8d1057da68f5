import { CounterError } from './counter.error.js';

/** The id is empty or not of the entity's primary key type. */
export class InvalidCounterIdError extends CounterError {}
