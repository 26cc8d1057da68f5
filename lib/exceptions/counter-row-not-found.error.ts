import { CounterError } from './counter.error.js';

/** The row does not exist in the database. */
export class CounterRowNotFoundError extends CounterError {}
