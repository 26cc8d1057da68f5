import { Injectable, Logger, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { from, mergeMap, type Observable } from 'rxjs';
import { MESSAGES } from '../counter.messages.js';
import { CounterService } from '../counter.service.js';

/**
 * Overlays live counter values on every counted entity in a handler's result (one Redis round trip
 * per shard touched). The response never fails because of counters: on any error it carries the
 * database values and a warning is logged.
 */
@Injectable()
export class CounterInterceptor implements NestInterceptor {
  private readonly logger = new Logger('CounterInterceptor');

  constructor(private readonly counters: CounterService) {}

  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(mergeMap((result) => from(this.overlay(result))));
  }

  private async overlay(result: unknown): Promise<unknown> {
    try {
      return await this.counters.overlay(result);
    } catch (error) {
      this.logger.warn(`${MESSAGES.overlayFailed()} ${(error as Error).message}`);
      return result;
    }
  }
}
