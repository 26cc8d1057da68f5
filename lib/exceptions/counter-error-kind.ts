import { HttpStatus } from '@nestjs/common';
import { CounterConfigurationError } from './counter-configuration.error.js';
import { CounterDatabaseUnavailableError } from './counter-database-unavailable.error.js';
import { CounterOutOfRangeError } from './counter-out-of-range.error.js';
import { CounterReplicationLagError } from './counter-replication-lag.error.js';
import { CounterRowNotFoundError } from './counter-row-not-found.error.js';
import { CounterSeedContentionError } from './counter-seed-contention.error.js';
import { CounterStoreUnavailableError } from './counter-store-unavailable.error.js';
import { InvalidCounterDefinitionError } from './invalid-counter-definition.error.js';
import { InvalidCounterDeltaError } from './invalid-counter-delta.error.js';
import { InvalidCounterIdError } from './invalid-counter-id.error.js';
import { InvalidCounterOptionError } from './invalid-counter-option.error.js';
import { CounterWindowBeyondRetentionError } from './counter-window-beyond-retention.error.js';
import { InvalidIdempotencyKeyError } from './invalid-idempotency-key.error.js';
import { UnknownCountedEntityError } from './unknown-counted-entity.error.js';
import { UnknownCounterError } from './unknown-counter.error.js';

/**
 * What kind of failure an error was, as `status()` and the health indicator show it: a stable name that
 * says where to look, never the error's own words (which may name tables, constraints or hosts; those go
 * to the log).
 * - `redis-unavailable`: Redis could not be reached or did not answer in time.
 * - `database-unavailable`: the database could not be reached, dropped the connection or timed out.
 * - `lock-conflict`: a deadlock, lock timeout or busy database outlasted the retries.
 * - `constraint-violation`: the database refused the write by a constraint (a CHECK, a trigger, a key).
 * - `invalid-data`: the database refused a value (out of its column's range, wrong type).
 * - `replication-lag`: a claimed batch did not reach its Redis Cluster replicas in time.
 * - `unknown`: anything else; the log has the error.
 * @publicApi
 */
export type CounterFailureReason =
  | 'redis-unavailable'
  | 'database-unavailable'
  | 'lock-conflict'
  | 'constraint-violation'
  | 'invalid-data'
  | 'replication-lag'
  | 'unknown';

/** How the module reports an error of its own: read by the HTTP filter, the metrics and `status()`. */
export interface CounterErrorKind {
  /**
   * The status `CounterExceptionFilter` answers with: the caller's error (4xx), a passing outage (503),
   * else the app's bug (500).
   */
  httpStatus: HttpStatus;
  /**
   * The `reason` label of `refused_changes_total` for a change that failed with it (nothing changed);
   * none for a failure that is not a refusal.
   */
  refusal?: string;
  /** The kind `status().lastFlushError` and the health check give it; none: told by its cause's codes. */
  failure?: CounterFailureReason;
}

type ErrorClass = abstract new (...args: never[]) => Error;

/** Every error class of the module, classified once. */
const KINDS: ReadonlyArray<[ErrorClass, CounterErrorKind]> = [
  [InvalidCounterIdError, { httpStatus: HttpStatus.BAD_REQUEST, refusal: 'invalid_id' }],
  [InvalidCounterDeltaError, { httpStatus: HttpStatus.BAD_REQUEST, refusal: 'invalid_delta' }],
  [InvalidIdempotencyKeyError, { httpStatus: HttpStatus.BAD_REQUEST, refusal: 'invalid_idempotency_key' }],
  [InvalidCounterOptionError, { httpStatus: HttpStatus.BAD_REQUEST }],
  [CounterWindowBeyondRetentionError, { httpStatus: HttpStatus.BAD_REQUEST }],
  [CounterRowNotFoundError, { httpStatus: HttpStatus.NOT_FOUND, refusal: 'row_not_found' }],
  [CounterOutOfRangeError, { httpStatus: HttpStatus.CONFLICT, refusal: 'out_of_range' }],
  [CounterStoreUnavailableError, { httpStatus: HttpStatus.SERVICE_UNAVAILABLE, failure: 'redis-unavailable' }],
  [CounterDatabaseUnavailableError, { httpStatus: HttpStatus.SERVICE_UNAVAILABLE, failure: 'database-unavailable' }],
  [CounterReplicationLagError, { httpStatus: HttpStatus.SERVICE_UNAVAILABLE, failure: 'replication-lag' }],
  [CounterSeedContentionError, { httpStatus: HttpStatus.SERVICE_UNAVAILABLE }],
  // A name that is not the registry's is a bug in the app, and a refused change all the same.
  [UnknownCountedEntityError, { httpStatus: HttpStatus.INTERNAL_SERVER_ERROR, refusal: 'unknown_entity' }],
  [UnknownCounterError, { httpStatus: HttpStatus.INTERNAL_SERVER_ERROR, refusal: 'unknown_counter' }],
  [InvalidCounterDefinitionError, { httpStatus: HttpStatus.INTERNAL_SERVER_ERROR }],
  [CounterConfigurationError, { httpStatus: HttpStatus.INTERNAL_SERVER_ERROR }],
];

/** Any other error: the app's bug, or a foreign error (a driver's) that `failureReasonOf` reads. */
const UNCLASSIFIED: CounterErrorKind = { httpStatus: HttpStatus.INTERNAL_SERVER_ERROR };

/** The kind of `error`, by its class (or the class it extends). */
export function errorKindOf(error: unknown): CounterErrorKind {
  return KINDS.find(([errorClass]) => error instanceof errorClass)?.[1] ?? UNCLASSIFIED;
}
