import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { LIVE_COUNTS_METADATA } from '../counter.constants.js';
import { CounterInterceptor } from '../interceptors/counter.interceptor.js';
import type { CounterOverlayOptions } from '../interfaces/counter-overlay.interface.js';

/**
 * Overlays live counter values from Redis on every counted entity in the route's result:
 * one entity, arrays, pagination wrappers and nested relations.
 *
 * @param options `{ windowed: true }` fills the entities' `@RollingCount()` properties too (one SQL
 *   statement per entity type); by default, the counters' totals only.
 */
export function LiveCounts(options: CounterOverlayOptions = {}): MethodDecorator & ClassDecorator {
  if (!options.windowed) return UseInterceptors(CounterInterceptor);
  return applyDecorators(SetMetadata(LIVE_COUNTS_METADATA, options), UseInterceptors(CounterInterceptor));
}
