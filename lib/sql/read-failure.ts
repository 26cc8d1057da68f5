import { MESSAGES } from '../counter.messages.js';
import { CounterDatabaseUnavailableError } from '../exceptions/counter-database-unavailable.error.js';
import { CounterError } from '../exceptions/counter.error.js';
import { InvalidCounterIdError } from '../exceptions/invalid-counter-id.error.js';
import type { CountedEntity } from '../model/counted-entity.js';
import type { CounterDialect } from './counter-dialect.js';

/**
 * The error a caller who asked for counters of `entity` gets when `operation` failed: a counter error,
 * with the driver's as its cause. Values the database refused are the caller's to fix, not an outage to
 * retry.
 */
export function readFailure(dialect: CounterDialect, entity: CountedEntity, operation: string, error: Error): Error {
  if (error instanceof CounterError) return error;
  if (dialect.isDataError(error)) {
    return new InvalidCounterIdError(MESSAGES.idRefusedByDatabase(entity.name, error.message), {
      cause: error,
      entity: entity.name,
    });
  }
  return new CounterDatabaseUnavailableError(MESSAGES.databaseFailed(operation, error.message), { cause: error });
}
