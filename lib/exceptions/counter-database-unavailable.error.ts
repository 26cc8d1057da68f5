import { CounterError } from './counter.error.js';

/**
 * The database did not answer within `databaseTimeoutMs` (down, or unreachable without an error, as
 * behind a firewall that drops packets), or failed while rows were loaded into Redis (the driver's
 * error is the `cause`). A flush stops at a timeout and leaves its batches in Redis for a later flush.
 */
export class CounterDatabaseUnavailableError extends CounterError {}
