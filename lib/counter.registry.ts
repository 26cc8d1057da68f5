import { Injectable } from '@nestjs/common';
import { UnknownCountedEntityError } from './exceptions/unknown-counted-entity.error.js';
import { UnknownCounterError } from './exceptions/unknown-counter.error.js';
import type { CountedEntity, CounterField } from './model/counted-entity.js';

/** Counted entities by class; filled once at bootstrap by the explorer. */
@Injectable()
export class CounterRegistry {
  private readonly entities = new Map<unknown, CountedEntity>();

  register(entity: CountedEntity): void {
    this.entities.set(entity.target, entity);
  }

  all(): CountedEntity[] {
    return [...this.entities.values()];
  }

  get(target: unknown): CountedEntity {
    const entity = this.find(target);
    if (!entity) throw UnknownCountedEntityError.of(target);
    return entity;
  }

  /** The counted entity of a class, undefined for anything else. */
  find(target: unknown): CountedEntity | undefined {
    return typeof target === 'function' ? this.entities.get(target) : undefined;
  }

  /** The counted entity an object is an instance of, if any (subclasses included). */
  forInstance(value: object): CountedEntity | undefined {
    for (
      let proto = Object.getPrototypeOf(value);
      proto && proto !== Object.prototype;
      proto = Object.getPrototypeOf(proto)
    ) {
      const entity = this.entities.get(proto.constructor);
      if (entity) return entity;
    }
    return undefined;
  }

  counter(entity: CountedEntity, name: unknown): CounterField {
    const field = this.findCounter(entity, name);
    if (!field) throw UnknownCounterError.of(entity.name, String(name), entity.counterNames);
    return field;
  }

  /** The entity's counter of that name, undefined when it has none. */
  findCounter(entity: CountedEntity, name: unknown): CounterField | undefined {
    return entity.counters.find((counter) => counter.name === name);
  }

  /** The named counters, or all of them when no names are given. */
  counters(entity: CountedEntity, names?: readonly string[]): CounterField[] {
    return names ? names.map((name) => this.counter(entity, name)) : entity.counters;
  }
}
