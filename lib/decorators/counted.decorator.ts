import 'reflect-metadata';
import { COUNTED_METADATA } from '../counter.constants.js';
import type { CountedOptions, CountedPropertyMetadata } from '../interfaces/counted-options.interface.js';

/**
 * Marks a numeric column of a TypeORM entity as a counter kept in Redis.
 *
 * @param name the counter's name in `CounterService` calls; defaults to the property name.
 * @param options bounds the counter must stay within (`{ min: 0 }` for counts that cannot go negative).
 *
 * @example
 * ```ts
 * @Counted('like_count', { min: 0 })
 * @Column('int', { default: 0 })
 * likeCount!: number;
 * ```
 */
export function Counted(name?: string, options: CountedOptions = {}): PropertyDecorator {
  return (target, propertyKey) => {
    const propertyName = String(propertyKey);
    const inherited: CountedPropertyMetadata[] = Reflect.getMetadata(COUNTED_METADATA, target.constructor) ?? [];
    // A copy, so that decorating a subclass never adds counters to its parent.
    const own = [...inherited, { propertyName, counterName: name ?? propertyName, options }];
    Reflect.defineMetadata(COUNTED_METADATA, own, target.constructor);
  };
}

/** The counted properties declared on an entity class (and its parents). */
export function getCountedProperties(target: object): CountedPropertyMetadata[] {
  return Reflect.getMetadata(COUNTED_METADATA, target) ?? [];
}
