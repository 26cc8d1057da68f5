import { Catch, HttpStatus, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { MESSAGES } from '../counter.messages.js';
import { CounterDatabaseUnavailableError } from '../exceptions/counter-database-unavailable.error.js';
import { CounterOutOfRangeError } from '../exceptions/counter-out-of-range.error.js';
import { CounterReplicationLagError } from '../exceptions/counter-replication-lag.error.js';
import { CounterRowNotFoundError } from '../exceptions/counter-row-not-found.error.js';
import { CounterSeedContentionError } from '../exceptions/counter-seed-contention.error.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import { CounterError } from '../exceptions/counter.error.js';
import { InvalidCounterDeltaError } from '../exceptions/invalid-counter-delta.error.js';
import { InvalidIdempotencyKeyError } from '../exceptions/invalid-idempotency-key.error.js';
import { InvalidCounterIdError } from '../exceptions/invalid-counter-id.error.js';
import { InvalidCounterOptionError } from '../exceptions/invalid-counter-option.error.js';

/** Seconds a client is told to wait (`Retry-After`) before it retries a change refused by an outage. */
export const COUNTER_RETRY_AFTER_SECONDS = 5;

/** The JSON body of a counter error's response, in the shape of Nest's own `HttpException` bodies. */
export interface CounterErrorResponseBody {
  statusCode: number;
  /** The status's reason phrase: 'Bad Request', 'Not Found', … */
  error: string;
  message: string;
  /** The error's class name, e.g. 'InvalidCounterIdError'. */
  code: string;
}

type ErrorClass = abstract new (...args: never[]) => CounterError;

/** The errors that are the caller's or a passing outage's, by status; any other is the app's bug (500). */
const STATUSES: Array<[ErrorClass, HttpStatus]> = [
  [InvalidCounterIdError, HttpStatus.BAD_REQUEST],
  [InvalidCounterDeltaError, HttpStatus.BAD_REQUEST],
  [InvalidIdempotencyKeyError, HttpStatus.BAD_REQUEST],
  [InvalidCounterOptionError, HttpStatus.BAD_REQUEST],
  [CounterRowNotFoundError, HttpStatus.NOT_FOUND],
  [CounterOutOfRangeError, HttpStatus.CONFLICT],
  [CounterStoreUnavailableError, HttpStatus.SERVICE_UNAVAILABLE],
  [CounterDatabaseUnavailableError, HttpStatus.SERVICE_UNAVAILABLE],
  [CounterReplicationLagError, HttpStatus.SERVICE_UNAVAILABLE],
  [CounterSeedContentionError, HttpStatus.SERVICE_UNAVAILABLE],
];

const REASONS: Partial<Record<HttpStatus, string>> = {
  [HttpStatus.BAD_REQUEST]: 'Bad Request',
  [HttpStatus.NOT_FOUND]: 'Not Found',
  [HttpStatus.CONFLICT]: 'Conflict',
  [HttpStatus.SERVICE_UNAVAILABLE]: 'Service Unavailable',
  [HttpStatus.INTERNAL_SERVER_ERROR]: 'Internal Server Error',
};

/**
 * Answers the counter module's errors over HTTP: 400 for an invalid id, delta, idempotency key or option
 * of recount or audit, 404 for a row that does not exist, 409 for a change that would leave the counter's
 * range, 503 with `Retry-After` while Redis or the database is unavailable. Anything else the module
 * throws (an unknown entity or counter name: a bug in the app) is a 500, logged with its stack. Register it with
 * `{ provide: APP_FILTER, useClass: CounterExceptionFilter }`, or
 * `app.useGlobalFilters(new CounterExceptionFilter(app.get(HttpAdapterHost)))`.
 * @publicApi
 */
@Catch(CounterError)
export class CounterExceptionFilter implements ExceptionFilter<CounterError> {
  private readonly logger = new Logger('CounterExceptionFilter');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: CounterError, host: ArgumentsHost): void {
    // Only HTTP has statuses; elsewhere (RPC, WebSockets) the transport's own handling applies.
    if (host.getType() !== 'http') throw error;
    const status = statusOf(error);
    const body: CounterErrorResponseBody = {
      statusCode: status,
      error: REASONS[status] ?? 'Error',
      // An outage's or a bug's details (hosts, stack) stay in the log; the caller learns what to do.
      message: status >= 500 ? MESSAGES.httpUnavailable(status) : error.message,
      code: error.name,
    };
    if (status === HttpStatus.INTERNAL_SERVER_ERROR) this.logger.error(error.message, error.stack);
    else if (status === HttpStatus.SERVICE_UNAVAILABLE) this.logger.warn(error.message);
    const response: unknown = host.switchToHttp().getResponse();
    const { httpAdapter } = this.adapterHost;
    if (status === HttpStatus.SERVICE_UNAVAILABLE) {
      httpAdapter.setHeader(response, 'Retry-After', String(COUNTER_RETRY_AFTER_SECONDS));
    }
    httpAdapter.reply(response, body, status);
  }
}

function statusOf(error: CounterError): HttpStatus {
  return STATUSES.find(([errorClass]) => error instanceof errorClass)?.[1] ?? HttpStatus.INTERNAL_SERVER_ERROR;
}
