import { Inject, Injectable, Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { collectCountedInstances } from './counted-instances.js';
import { CounterChangeApplier } from './counter-change.applier.js';
import { CounterFlusher } from './flush/counter.flusher.js';
import { FlushHistory } from './flush/flush.history.js';
import { MESSAGES } from './counter.messages.js';
import { CounterReader, type RowRequest } from './counter.reader.js';
import { CounterRegistry } from './counter.registry.js';
import type { CountedEntity, CounterField } from './model/counted-entity.js';
import { toRowId } from './model/row-id.js';
import { COUNTER_DATA_SOURCE, COUNTER_INSTRUMENTS } from './counter.constants.js';
import { CounterRowNotFoundError } from './exceptions/counter-row-not-found.error.js';
import { CounterStoreUnavailableError } from './exceptions/counter-store-unavailable.error.js';
import type { CounterChangeOptions, CounterChangeOutcome } from './interfaces/counter-change.interface.js';
import type { CounterStatus } from './interfaces/counter-status.interface.js';
import type { EntityClass } from './interfaces/entity-class.interface.js';
import type { FlushReport } from './interfaces/flush-report.interface.js';
import type { AuditOptions, AuditReport, RecountOptions, RecountReport } from './interfaces/reconcile.interface.js';
import { CounterReconciler } from './reconcile/counter.reconciler.js';
import { CountedRowsQuery } from './sql/counted-rows.query.js';
import { CounterDatabase } from './sql/counter.database.js';
import { CounterValueHydrator } from './sql/counter-value.hydrator.js';
import type { CounterInstruments } from './metrics/counter.instruments.js';
import { CounterKeys } from './redis/counter.keys.js';
import type { VersionedValue } from './redis/counter.store.js';
import { FlushStore } from './redis/flush.store.js';

/** The counters of entities: change them, read them live, overlay them, flush them. */
@Injectable()
export class CounterService {
  private readonly logger = new Logger('CounterService');

  constructor(
    private readonly registry: CounterRegistry,
    private readonly keys: CounterKeys,
    private readonly reader: CounterReader,
    private readonly flusher: CounterFlusher,
    private readonly record: FlushHistory,
    private readonly flushStore: FlushStore,
    @Inject(COUNTER_INSTRUMENTS) private readonly instruments: CounterInstruments,
    private readonly changes: CounterChangeApplier,
    @Inject(COUNTER_DATA_SOURCE) dataSource: DataSource,
    database: CounterDatabase,
    private readonly hydrator: CounterValueHydrator,
  ) {
    const counters = {
      live: this.liveValues.bind(this),
      versioned: this.versionedValues.bind(this),
      replace: this.changes.replace.bind(this.changes),
    };
    const rows = new CountedRowsQuery(dataSource, database.dialect);
    this.reconciler = new CounterReconciler(counters, rows, dataSource, this.logger);
  }

  private readonly reconciler: CounterReconciler;

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
    if (!values) throw new CounterRowNotFoundError(MESSAGES.rowNotFound(counted.name, rowId.text));
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
   * NULL counter becomes 0, as a live read gives it) and a warning is logged.
   */
  async overlay<T>(value: T): Promise<T> {
    const instances = collectCountedInstances(value, this.registry);
    const requests: Array<RowRequest & { instance: Record<string, unknown> }> = [];
    for (const { entity, instance } of instances) {
      const id = instance[entity.primary.propertyName];
      if (id === undefined || id === null) continue;
      requests.push({ entity, id: toRowId(entity, id), instance });
    }
    if (requests.length === 0) return value;
    let values: Array<number[] | undefined>;
    try {
      values = await this.reader.read(requests, false);
    } catch (error) {
      if (!(error instanceof CounterStoreUnavailableError)) throw error;
      this.logger.warn(`${MESSAGES.overlayFailed()} ${error.message}`);
      for (const { entity, instance } of requests) {
        for (const field of entity.counters)
          if (instance[field.propertyName] === null) instance[field.propertyName] = this.hydrator.hydrate(field, 0);
      }
      return value;
    }
    requests.forEach(({ entity, instance }, index) => {
      const row = values[index];
      if (!row) return;
      for (let counter = 0; counter < row.length; counter++) {
        const field = entity.counters[counter];
        instance[field.propertyName] = this.hydrator.hydrate(field, row[counter]);
      }
    });
    return value;
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
   * @see README, "Recount and audit"
   */
  recount(entity: EntityClass, counter: string, options?: RecountOptions): Promise<RecountReport> {
    const counted = this.registry.get(entity);
    return this.reconciler.recount(counted, this.registry.counter(counted, counter), options);
  }

  /** Compares live values with the declared source, for the rows given, a random sample, or all; changes nothing. */
  async audit(entity: EntityClass, counter: string, options?: AuditOptions): Promise<AuditReport> {
    const counted = this.registry.get(entity);
    const field = this.registry.counter(counted, counter);
    const report = await this.reconciler.audit(counted, field, options);
    this.instruments.audited(counted, field, report.drifted.length);
    return report;
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
  async status(): Promise<CounterStatus> {
    const { lastSuccessfulFlushAt, lastFailedFlushAt, lastFlushError, consecutiveFailedFlushes, lastRedisDataLoss } =
      this.record;
    const flushing = {
      lastSuccessfulFlushAt,
      lastFailedFlushAt,
      lastFlushError,
      consecutiveFailedFlushes,
      lastRedisDataLoss,
    };
    const shards = this.registry.all().flatMap((entity) => this.keys.shardsOf(entity.key));
    try {
      const backlog = await this.flushStore.backlog(shards);
      const ages = backlog.flatMap((shard) => (shard.oldestAgeMs === null ? [] : [shard.oldestAgeMs]));
      return {
        redisAvailable: true,
        pendingRows: backlog.reduce((sum, shard) => sum + shard.dirtyRows + shard.batchRows, 0),
        inFlightBatches: backlog.filter((shard) => shard.batchRows > 0).length,
        oldestPendingAgeMs: ages.length === 0 ? null : Math.max(...ages),
        ...flushing,
      };
    } catch (error) {
      if (!(error instanceof CounterStoreUnavailableError)) throw error;
      return { redisAvailable: false, pendingRows: null, inFlightBatches: null, oldestPendingAgeMs: null, ...flushing };
    }
  }

  private async liveValues(counted: CountedEntity, field: CounterField, ids: ReadonlyArray<string | number>) {
    const values = await this.reader.read(
      ids.map((id) => ({ entity: counted, id: toRowId(counted, id) })),
      false,
    );
    const index = counted.counters.indexOf(field);
    return values.map((row) => row?.[index]);
  }

  /** Live values with their versions (rows Redis lacks loaded first); undefined for a row missing from the database. */
  private async versionedValues(
    counted: CountedEntity,
    field: CounterField,
    ids: ReadonlyArray<string | number>,
  ): Promise<Array<VersionedValue | undefined>> {
    const values = await this.liveValues(counted, field, ids);
    const loaded = ids.filter((_, index) => values[index] !== undefined);
    const versioned = await this.changes.versioned(counted, field, loaded);
    let at = 0;
    // A row that expired since it was loaded has no version to expect: '' is none, so its set finds it changed.
    return values.map((value) => (value === undefined ? undefined : (versioned[at++] ?? { value, version: '' })));
  }
}

function pick(entity: CountedEntity, fields: CounterField[], row: number[]): Record<string, number> {
  return Object.fromEntries(fields.map((field) => [field.name, row[entity.counters.indexOf(field)]]));
}
