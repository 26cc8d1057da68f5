import { CounterError } from './counter.error.js';

/** The module's options or its environment (data source, ledger, scheduler) are wrong (thrown at bootstrap). */
export class CounterConfigurationError extends CounterError {}
