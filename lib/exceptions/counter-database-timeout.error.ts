import { CounterError } from './counter.error.js';

/**
 * The database did not answer within `databaseTimeoutMs` (down, or unreachable without an error, as
 * behind a firewall that drops packets). Reads of rows not yet in Redis fail with it; a flush stops at
 * it and leaves its batches in Redis for a later flush.
 */
export class CounterDatabaseTimeoutError extends CounterError {}
