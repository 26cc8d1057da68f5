import 'reflect-metadata';
import { ROLLING_COUNT_METADATA } from '../counter.constants.js';
import type { RollingCountPropertyMetadata } from '../interfaces/counted-options.interface.js';

/**
 * Marks a property that is not a column as a counter's net change over one of its rolling windows,
 * which `@LiveCounts({ windowed: true })` and `CounterService.overlay(value, { windowed: true })` fill
 * in: what `count` gives with `since` that long ago, live. The window must be one the counter declares
 * in `rolling`, whose sums the flush keeps, so the overlay reads one stored sum per row.
 *
 * @param counter the name of a counter of the same entity, declared with `windows` and `rolling`.
 * @param window one of its `rolling` windows (`'24h'`, `'7d'`).
 *
 * @example
 * ```ts
 * @Counted('view_count', { windows: ['hour', 'day'], rolling: ['24h'] })
 * @Column('bigint', { default: 0 })
 * viewCount!: number;
 *
 * @RollingCount('view_count', '24h')
 * viewsToday?: number;
 * ```
 */
export function RollingCount(counter: string, window: string): PropertyDecorator {
  return (target, propertyKey) => {
    const propertyName = String(propertyKey);
    const inherited: RollingCountPropertyMetadata[] =
      Reflect.getMetadata(ROLLING_COUNT_METADATA, target.constructor) ?? [];
    // A copy, so that decorating a subclass never adds properties to its parent.
    const own = [...inherited, { propertyName, counterName: counter, window }];
    Reflect.defineMetadata(ROLLING_COUNT_METADATA, own, target.constructor);
  };
}

/** The rolling count properties declared on an entity class (and its parents). */
export function getRollingCountProperties(target: object): RollingCountPropertyMetadata[] {
  return Reflect.getMetadata(ROLLING_COUNT_METADATA, target) ?? [];
}
