import { CounterError } from './counter.error.js';

/** The class passed is not a counted entity of the module's data source. */
export class UnknownCountedEntityError extends CounterError {}
