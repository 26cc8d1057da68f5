import { UseInterceptors } from '@nestjs/common';
import { CounterInterceptor } from '../interceptors/counter.interceptor.js';

/**
 * Overlays live counter values from Redis on every counted entity in the route's result:
 * one entity, arrays, pagination wrappers and nested relations.
 */
export function LiveCounts(): MethodDecorator & ClassDecorator {
  return UseInterceptors(CounterInterceptor);
}
