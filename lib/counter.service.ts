import { Injectable } from '@nestjs/common';
import { CounterChangeApplier } from './counter-change.applier.js';
import { CounterOverlay } from './counter.overlay.js';
import { CounterReader } from './counter.reader.js';
import { CounterRegistry } from './counter.registry.js';
import { CounterStatusReader } from './counter-status.reader.js';
import { CounterRowNotFoundError } from './exceptions/counter-row-not-found.error.js';
import { CounterFlusher } from './flush/counter.flusher.js';
import type { CounterChangeOptions, CounterChangeOutcome } from './interfaces/counter-change.interface.js';
import type { CounterOverlayOptions } from './interfaces/counter-overlay.interface.js';
import type { CounterStatus } from './interfaces/counter-status.interface.js';
import type { EntityClass } from './interfaces/entity-class.interface.js';
import type { FlushReport } from './interfaces/flush-report.interface.js';
import type { AuditOptions, AuditReport, RecountOptions, RecountReport } from './interfaces/reconcile.interface.js';
import type { CountedEntity, CounterField } from './model/counted-entity.js';
import { toRowId } from './model/row-id.js';
import { CounterReconciler } from './reconcile/counter.reconciler.js';
import { CounterWindows } from './windows/counter-windows.js';
import { CounterTop } from './windows/counter-top.js';
import type {
  CounterBucketValue,
  CounterSeriesWindow,
  CounterTopRow,
  CounterTopWindow,
  CounterWindow,
} from './interfaces/counter-window.interface.js';

/** The counters of entities: change them, read them live, overlay them, flush them. */
@Injectable()
export class CounterService {
  constructor(
    private readonly registry: CounterRegistry,
    private readonly changes: CounterChangeApplier,
    private readonly reader: CounterReader,
    private readonly overlays: CounterOverlay,
    private readonly reconciler: CounterReconciler,
    private readonly flusher: CounterFlusher,
    private readonly statusReader: CounterStatusReader,
    private readonly windows: CounterWindows,
    private readonly ranking: CounterTop,
  ) {}

  /**
   * Adds `by` (default 1) to a counter, atomically, and resolves with its new value. One Redis round trip
   * when the row is in Redis; otherwise the row is first loaded from the database. With an
   * `idempotencyKey` already used on the row, nothing is applied and it resolves with the current value
   * (`change` tells the two apart).
   * @throws UnknownCountedEntityError, UnknownCounterError, InvalidCounterIdError, InvalidCounterDeltaError,
   *   InvalidIdempotencyKeyError, CounterOutOfRangeError, CounterRowNotFoundError, CounterStoreUnavailableError
   */
  increment(
    entity: EntityClass,
    id: string | number,
    counter: string,
    by = 1,
    options?: CounterChangeOptions,
  ): Promise<number> {
    return this.changes.apply(entity, id, counter, by, 1, options, false) as Promise<number>;
  }

  /** Subtracts `by` (default 1) from a counter; see `increment`. */
  decrement(
    entity: EntityClass,
    id: string | number,
    counter: string,
    by = 1,
    options?: CounterChangeOptions,
  ): Promise<number> {
    return this.changes.apply(entity, id, counter, by, -1, options, false) as Promise<number>;
  }

  /**
   * Adds `delta` (negative to subtract) to a counter, like `increment`, and resolves with what the call
   * did: `{ value, applied }`, `applied` false when `idempotencyKey` had already been used on the row
   * within `idempotencyTtlSeconds` (nothing applied; `value` is the counter's current value). A caller
   * that retries a failed or timed-out change with its key until it resolves gets it applied once.
   * @throws the errors of `increment`
   */
  change(
    entity: EntityClass,
    id: string | number,
    counter: string,
    delta: number,
    options?: CounterChangeOptions,
  ): Promise<CounterChangeOutcome> {
    return this.changes.apply(entity, id, counter, delta, 1, options, true) as Promise<CounterChangeOutcome>;
  }

  /**
   * The live value of a counter, a number whatever the column's type (a `bigint` that TypeORM loads as
   * text too). Falls back to the database value when Redis is unreachable.
   * @throws CounterRowNotFoundError when the row does not exist
   */
  async get(entity: EntityClass, id: string | number, counter: string): Promise<number> {
    const counted = this.registry.get(entity);
    const field = this.registry.counter(counted, counter);
    const rowId = toRowId(counted, id);
    const [values] = await this.reader.read([{ entity: counted, id: rowId }], true);
    if (!values) throw CounterRowNotFoundError.of(counted.name, rowId.text);
    return values[counted.counters.indexOf(field)];
  }

  /**
   * Live values of many rows (all counters, or the ones named), keyed by the ids as given, as numbers
   * (see `get`). Rows that do not exist in the database are left out. One Redis round trip per shard
   * touched.
   */
  async getMany<Id extends string | number>(
    entity: EntityClass,
    ids: readonly Id[],
    counters?: readonly string[],
  ): Promise<Map<Id, Record<string, number>>> {
    const counted = this.registry.get(entity);
    const fields = this.registry.counters(counted, counters);
    const rowIds = ids.map((id) => toRowId(counted, id));
    const values = await this.reader.read(
      rowIds.map((id) => ({ entity: counted, id })),
      true,
    );
    const result = new Map<Id, Record<string, number>>();
    ids.forEach((id, index) => {
      const row = values[index];
      if (row) result.set(id, pick(counted, fields, row));
    });
    return result;
  }

  /**
   * Writes live counter values, in place, into every counted entity found in `value`: an entity, an
   * array, or plain objects containing them (pagination wrappers, relations). Returns `value`. Each value
   * has the type TypeORM loads the column as (a `bigint` as text on PostgreSQL and MySQL/MariaDB, or
   * what its transformer gives). When Redis is unreachable the entities keep their database values (a
   * NULL counter becomes 0, as a live read gives it) and a warning is logged. With `{ windowed: true }`,
   * their `@RollingCount()` properties too, as `count` gives them (one SQL statement per entity type): as
   * of the last flush when Redis is unreachable, left as loaded (and a warning logged) on other failures.
   */
  overlay<T>(value: T, options?: CounterOverlayOptions): Promise<T> {
    return this.overlays.overlay(value, options);
  }

  /**
   * Sets a counter to `value` and resolves with the live value it replaced. The difference is a change
   * like any other: once flushed, the database holds `value` plus the changes made after the set.
   * @throws as `increment`; CounterOutOfRangeError when `value` is outside the counter's bounds
   */
  set(entity: EntityClass, id: string | number, counter: string, value: number): Promise<number> {
    return this.changes.set(entity, id, counter, value);
  }

  /**
   * Corrects the counter of the rows given, or of every row (walked in primary key order, `batchSize` at
   * a time, progress logged), to the value its declared source gives (`@Counted({ source })`).
   * @see docs/RECOUNT.md, "Audit and recount"
   */
  recount(entity: EntityClass, counter: string, options?: RecountOptions): Promise<RecountReport> {
    const counted = this.registry.get(entity);
    return this.reconciler.recount(counted, this.registry.counter(counted, counter), options);
  }

  /** Compares live values with the declared source, for the rows given, a random sample, or all; changes nothing. */
  async audit(entity: EntityClass, counter: string, options?: AuditOptions): Promise<AuditReport> {
    const counted = this.registry.get(entity);
    return this.reconciler.audit(counted, this.registry.counter(counted, counter), options);
  }

  /**
   * The net change of a windowed counter (`@Counted({ windows })`) of a row over a window of time, live:
   * the buckets in the database plus the changes still in Redis. The window is made of whole buckets: it
   * counts every hour (or day, for a counter that keeps days only) that overlaps [since, until), in days
   * where whole days fit. `until` defaults to now.
   * @throws InvalidCounterOptionError for a bound that is not a time, or a counter without windows;
   *   CounterWindowBeyondRetentionError for a window older than the buckets kept (`bucketRetentionMs`)
   */
  count(entity: EntityClass, id: string | number, counter: string, window: CounterWindow): Promise<number> {
    return this.windows.count(entity, id, counter, window);
  }

  /**
   * The net change of a windowed counter of a row per bucket of `granularity` over a window, live and in
   * order, with 0 for the buckets without changes. In the finest granularity the counter keeps, their sum
   * is what `count` gives for the same window.
   * @throws as `count`; InvalidCounterOptionError for a granularity the counter does not keep
   */
  series(
    entity: EntityClass,
    id: string | number,
    counter: string,
    window: CounterSeriesWindow,
  ): Promise<CounterBucketValue[]> {
    return this.windows.series(entity, id, counter, window);
  }

  /**
   * The rows of a windowed counter with the highest net change over a window, highest first (ties by
   * id), with that change: at most `limit` (1 to 1000) rows, those whose change is 0 or less left out.
   * As of the last flush: the changes still in Redis are not counted. The window is made of whole
   * buckets, as `count`'s. Over one of the counter's rolling windows up to now (`since` an n-hour or
   * n-day rolling window ago, `until` left out) it reads the sums the flush keeps, by index; any other
   * window adds up the buckets of every row, which is slower: declare a rolling window for a hot query.
   * @throws as `count`; InvalidCounterOptionError for a `limit` that is not a whole number from 1 to 1000
   * @see CountedOptions.rolling
   */
  top(entity: EntityClass, counter: string, window: CounterTopWindow): Promise<CounterTopRow[]> {
    return this.ranking.top(entity, counter, window);
  }

  /** Writes every pending change to the database now (the scheduled flush does the same). */
  flush(): Promise<FlushReport> {
    return this.flusher.flush();
  }

  /**
   * The backlog in Redis (rows waiting for the database, oldest change's age: all instances together)
   * and this instance's flushing (last success, last failure, data losses it detected). With Redis
   * down it still answers, with the backlog fields null. One round trip per Redis node.
   */
  status(): Promise<CounterStatus> {
    return this.statusReader.status();
  }
}

function pick(entity: CountedEntity, fields: CounterField[], row: number[]): Record<string, number> {
  return Object.fromEntries(fields.map((field) => [field.name, row[entity.counters.indexOf(field)]]));
}
