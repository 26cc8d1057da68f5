import { Catch, HttpStatus, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import {
  CounterDatabaseUnavailableError,
  CounterError,
  CounterOutOfRangeError,
  CounterRowNotFoundError,
  CounterStoreUnavailableError,
  InvalidCounterIdError,
} from 'nestjs-counter';

/** Maps the counter library's errors to HTTP: missing row 404, below zero 409, Redis or database down 503. */
@Catch(CounterError)
export class CounterErrorsFilter implements ExceptionFilter {
  catch(error: CounterError, host: ArgumentsHost): void {
    const status = statusOf(error);
    host
      .switchToHttp()
      .getResponse<{ status(code: number): { json(body: unknown): void } }>()
      .status(status)
      .json({ statusCode: status, error: error.name, message: error.message });
  }
}

function statusOf(error: CounterError): number {
  if (error instanceof CounterRowNotFoundError) return HttpStatus.NOT_FOUND;
  if (error instanceof CounterOutOfRangeError) return HttpStatus.CONFLICT;
  if (error instanceof InvalidCounterIdError) return HttpStatus.BAD_REQUEST;
  if (error instanceof CounterStoreUnavailableError || error instanceof CounterDatabaseUnavailableError) {
    return HttpStatus.SERVICE_UNAVAILABLE;
  }
  return HttpStatus.INTERNAL_SERVER_ERROR;
}
