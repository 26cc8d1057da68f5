import { Catch, HttpStatus, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { MESSAGES } from '../counter.messages.js';
import { errorKindOf } from '../exceptions/counter-error-kind.js';
import { CounterError } from '../exceptions/counter.error.js';

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
 * range, 503 with `Retry-After` while Redis or the database is unavailable (a debug line each: the outage
 * itself is logged once). Anything else the module throws (an unknown entity or counter name: a bug in
 * the app) is a 500, logged with its stack. Register it with
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
    const status = errorKindOf(error).httpStatus;
    const body: CounterErrorResponseBody = {
      statusCode: status,
      error: REASONS[status] ?? 'Error',
      // An outage's or a bug's details (hosts, stack) stay in the log; the caller learns what to do.
      message: status >= 500 ? MESSAGES.httpUnavailable(status) : error.message,
      code: error.name,
    };
    // An outage is logged once when it begins and once when it ends (OutageLog), not once per request.
    if (status === HttpStatus.INTERNAL_SERVER_ERROR) this.logger.error(error.message, error.stack);
    else if (status === HttpStatus.SERVICE_UNAVAILABLE) this.logger.debug(error.message);
    const response: unknown = host.switchToHttp().getResponse();
    const { httpAdapter } = this.adapterHost;
    if (status === HttpStatus.SERVICE_UNAVAILABLE) {
      httpAdapter.setHeader(response, 'Retry-After', String(COUNTER_RETRY_AFTER_SECONDS));
    }
    httpAdapter.reply(response, body, status);
  }
}
