import { Injectable } from '@nestjs/common';
import type { EntityMetadata } from 'typeorm';
import { MESSAGES } from './counter.messages.js';
import { UnknownCountedEntityError } from './exceptions/unknown-counted-entity.error.js';
import { UnknownCounterError } from './exceptions/unknown-counter.error.js';
import type { CounterSource } from './interfaces/counted-options.interface.js';
import type { EntityClass } from './interfaces/entity-class.interface.js';

/** TypeORM's column metadata, named from the package's root: a deep import would tie us to its file layout. */
export type ColumnMetadata = EntityMetadata['columns'][number];

/** The values an integer primary column can hold, both ends included. */
export interface IdRange {
  min: bigint;
  max: bigint;
}

/** One counted column of an entity. */
export interface CounterField {
  name: string;
  propertyName: string;
  column: ColumnMetadata;
  /** Where its true value comes from, if declared (`recount`, `audit`). */
  source?: CounterSource;
  min: number;
  max: number;
}

/** What the module knows about one counted entity. */
export interface CountedEntity {
  target: EntityClass;
  /** The class name, for messages. */
  name: string;
  /** The entity's part of every Redis key: its table path. */
  key: string;
  metadata: EntityMetadata;
  primary: ColumnMetadata;
  /** Whether ids are integers (validated and sent as numbers) or strings. */
  numericId: boolean;
  /** The ids the integer primary column can hold; an id outside is refused before any query. */
  idRange?: IdRange;
  /** Whether string ids are UUIDs, which the database compares without regard to case. */
  uuidId: boolean;
  /** The characters a string id may have: its column's declared length (`varchar(n)`), if any. */
  idMaxLength?: number;
  counters: CounterField[];
  /** The counters' names, in the same order: one array, made once, for every Redis call that names them. */
  counterNames: string[];
}

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
    if (!entity) throw new UnknownCountedEntityError(MESSAGES.unknownEntity(target));
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
    if (!field) {
      throw new UnknownCounterError(MESSAGES.unknownCounter(entity.name, String(name), entity.counterNames));
    }
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
