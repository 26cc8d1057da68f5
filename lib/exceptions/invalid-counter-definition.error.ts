import { CounterError } from './counter.error.js';

/** An entity's `@Counted()` declaration cannot work (thrown at bootstrap). */
export class InvalidCounterDefinitionError extends CounterError {}
