import type { EntityMetadata } from 'typeorm';
import type { CounterSource } from '../interfaces/counted-options.interface.js';
import type { EntityClass } from '../interfaces/entity-class.interface.js';
import type { RollingWindow } from './rolling-window.js';
import type { Granularity } from './time-bucket.js';

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
  /** The granularities of its buckets (`@Counted({ windows })`), finest first; empty for a plain counter. */
  windows: readonly Granularity[];
  /**
   * Its rolling windows (`@Counted({ rolling })`), whose sums per row the flush keeps, each a whole number
   * of buckets of the finest of `windows`; empty when none is declared.
   */
  rolling: readonly RollingWindow[];
  /**
   * Its name as the change and claim scripts take it: the name, then for a windowed counter `@` and the
   * letter of its finest granularity (`view_count@h`), the only one its changes go to (the coarser
   * buckets are the finest ones added up, see CounterBuckets).
   */
  scriptName: string;
}

/**
 * A property (not a column) that the overlay fills, when asked for windows, with a counter's net change
 * over one of its rolling windows (`@RollingCount()`).
 */
export interface RollingCountField {
  propertyName: string;
  counter: CounterField;
  window: RollingWindow;
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
  /** The counters' `scriptName`s, in the same order, for the claim script. */
  scriptNames: string[];
  /** Its `@RollingCount()` properties; empty when it has none. */
  rollingCounts: RollingCountField[];
}
