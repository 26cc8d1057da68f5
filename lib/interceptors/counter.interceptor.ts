import { Injectable, Logger, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { from, mergeMap, type Observable } from 'rxjs';
import { LIVE_COUNTS_METADATA } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterService } from '../counter.service.js';
import type { CounterOverlayOptions } from '../interfaces/counter-overlay.interface.js';

/**
 * Overlays live counter values on every counted entity in a handler's result (one Redis round trip
 * per shard touched), and their rolling counts where the route asks for them
 * (`@LiveCounts({ windowed: true })`). The response never fails because of counters: on any error it
 * carries the database values and a warning is logged.
 */
@Injectable()
export class CounterInterceptor implements NestInterceptor {
  private readonly logger = new Logger('CounterInterceptor');
  /** Made here rather than injected, so that `new CounterInterceptor(counters)` keeps working. */
  private readonly reflector = new Reflector();

  constructor(private readonly counters: CounterService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const options = this.reflector.getAllAndOverride<CounterOverlayOptions | undefined>(LIVE_COUNTS_METADATA, [
      context.getHandler(),
      context.getClass(),
    ]);
    return next.handle().pipe(mergeMap((result) => from(this.overlay(result, options))));
  }

  private async overlay(result: unknown, options: CounterOverlayOptions | undefined): Promise<unknown> {
    try {
      return await this.counters.overlay(result, options);
    } catch (error) {
      this.logger.warn(`${MESSAGES.overlayFailed()} ${(error as Error).message}`);
      return result;
    }
  }
}
