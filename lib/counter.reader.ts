import { Inject, Injectable } from '@nestjs/common';
import { COUNTER_OPTIONS, COUNTER_TRACER } from './counter.constants.js';
import { groupBy } from './collections.js';
import type { RowId } from './model/row-id.js';
import type { CountedEntity } from './model/counted-entity.js';
import { SeedRetry } from './seed.retry.js';
import { CounterOutOfRangeError } from './exceptions/counter-out-of-range.error.js';
import { CounterSeedContentionError } from './exceptions/counter-seed-contention.error.js';
import { CounterStoreUnavailableError } from './exceptions/counter-store-unavailable.error.js';
import type { ResolvedCounterOptions } from './interfaces/resolved-counter-options.interface.js';
import { CounterKeys, type ShardKeys } from './redis/counter.keys.js';
import { CounterStore } from './redis/counter.store.js';
import { CounterDatabase } from './sql/counter.database.js';
import { loadAttributes, SPAN } from './tracing/counter-span.attributes.js';
import type { CounterTracer } from './tracing/counter.tracer.js';

/** Live values of one row: one number per counter of its entity, in declaration order. */
export type RowValues = number[];

export interface RowRequest {
  entity: CountedEntity;
  id: RowId;
}

interface PendingRow extends RowRequest {
  encodedId: string;
  shardKeys: ShardKeys;
  /** Result key: entity key and row id. */
  slotKey: string;
}

/**
 * Reads live values: from Redis in one script call per shard, seeding rows Redis does not hold from
 * the database. A seed only lands if no batch of the shard was acknowledged while the database was
 * read; otherwise the row is read again, so a half-done flush is never counted twice or missed.
 */
@Injectable()
export class CounterReader {
  /** Concurrent seeds of one row share one database read. */
  private readonly seeding = new Map<string, Promise<RowValues | undefined>>();

  constructor(
    private readonly store: CounterStore,
    private readonly keys: CounterKeys,
    private readonly database: CounterDatabase,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
    @Inject(COUNTER_TRACER) private readonly tracer: CounterTracer,
  ) {}

  static resultKey(entity: CountedEntity, id: RowId): string {
    return `${entity.key}\n${id.text}`;
  }

  /**
   * Live values of each request, in order; undefined for a row missing from the database. With
   * `fallback`, an unreachable Redis yields database values instead of an error.
   */
  async read(requests: RowRequest[], fallback: boolean): Promise<Array<RowValues | undefined>> {
    const rows = requests.map((request) => this.locate(request));
    let values: Map<string, RowValues>;
    try {
      values = await this.readLive(rows);
    } catch (error) {
      if (!fallback || !(error instanceof CounterStoreUnavailableError)) throw error;
      values = await this.databaseValues(rows);
    }
    return rows.map((row) => values.get(row.slotKey));
  }

  /** Makes sure one row is seeded (the increment path), sharing the work with concurrent callers. */
  async ensureSeeded(request: RowRequest): Promise<RowValues | undefined> {
    const key = CounterReader.resultKey(request.entity, request.id);
    let seeding = this.seeding.get(key);
    if (!seeding) {
      seeding = this.readLive([this.locate(request)])
        .then((values) => values.get(key))
        .finally(() => this.seeding.delete(key));
      this.seeding.set(key, seeding);
    }
    return seeding;
  }

  private locate(request: RowRequest): PendingRow {
    const encodedId = this.keys.encodeId(request.id.text);
    return {
      entity: request.entity,
      id: request.id,
      encodedId,
      shardKeys: this.keys.shard(request.entity.key, this.keys.shardOf(encodedId)),
      slotKey: CounterReader.resultKey(request.entity, request.id),
    };
  }

  private async readLive(rows: PendingRow[]): Promise<Map<string, RowValues>> {
    const result = new Map<string, RowValues>();
    let pending = dedupe(rows);
    const retry = new SeedRetry();
    while (pending.length > 0) {
      const groups = groupByShard(pending);
      const reads = await this.store.readRows(
        groups.map((group) => ({
          shard: group.shardKeys,
          encodedIds: group.rows.map((row) => row.encodedId),
          counters: group.entity.counterNames,
        })),
      );
      const misses: Array<{ row: PendingRow; generation: string }> = [];
      groups.forEach((group, g) =>
        group.rows.forEach((row, r) => {
          const values = reads[g].values[r];
          if (values.every((value) => value !== null)) result.set(row.slotKey, values as number[]);
          else misses.push({ row, generation: reads[g].generation });
        }),
      );
      pending = await this.seed(misses, result);
      if (pending.length > 0 && !(await retry.next())) {
        throw CounterSeedContentionError.of(pending[0].entity.name, pending[0].id.text);
      }
    }
    return result;
  }

  /** Seeds the misses from the database; returns the rows to read again. */
  private async seed(
    misses: Array<{ row: PendingRow; generation: string }>,
    result: Map<string, RowValues>,
  ): Promise<PendingRow[]> {
    if (misses.length === 0) return [];
    const databaseValues = await this.databaseValues(misses.map(({ row }) => row));
    const found = misses.filter(({ row }) => databaseValues.has(row.slotKey));
    const groups = groupByShard(found.map(({ row }) => row));
    const generationOf = new Map(found.map(({ row, generation }) => [row.shardKeys.tag, generation]));
    const seeded = await this.store.seedRows(
      groups.map((group) => ({
        shard: group.shardKeys,
        generation: generationOf.get(group.shardKeys.tag)!,
        encodedIds: group.rows.map((row) => row.encodedId),
        counters: group.entity.counterNames,
        databaseValues: group.rows.map((row) => databaseValues.get(row.slotKey)!),
      })),
    );
    const retry: PendingRow[] = [];
    groups.forEach((group, g) =>
      group.rows.forEach((row, r) => {
        const values = seeded[g]?.[r];
        if (values) result.set(row.slotKey, values);
        else retry.push(row);
      }),
    );
    return retry;
  }

  /** Database values by result key, for the rows that exist. */
  private async databaseValues(rows: PendingRow[]): Promise<Map<string, RowValues>> {
    const values = new Map<string, RowValues>();
    for (const [entity, entityRows] of groupBy(rows, (row) => row.entity)) {
      const ids = entityRows.map((row) => row.id.sql);
      const found = await this.tracer.inSpan(SPAN.load, loadAttributes(entity, ids.length), () =>
        this.database.readCounters(entity, ids),
      );
      for (const row of entityRows) {
        const record = found.get(row.id.text);
        if (!record) continue;
        values.set(
          row.slotKey,
          entity.counters.map((counter) => toCount(record[counter.propertyName], entity, counter.name, row.id.text)),
        );
      }
    }
    return values;
  }
}

function toCount(value: unknown, entity: CountedEntity, counter: string, id: string): number {
  const count = value === null || value === undefined ? 0 : Number(value);
  if (!Number.isSafeInteger(count)) {
    throw CounterOutOfRangeError.ofDatabaseValue({ entity: entity.name, id, counter }, value);
  }
  return count;
}

/** The rows without repeats (a page may hold an entity twice); the same array when there are none. */
function dedupe(rows: PendingRow[]): PendingRow[] {
  const seen = new Set<string>();
  for (const row of rows) seen.add(row.slotKey);
  if (seen.size === rows.length) return rows;
  return rows.filter((row) => seen.delete(row.slotKey));
}

function groupByShard(rows: PendingRow[]) {
  return [...groupBy(rows, (row) => row.shardKeys.tag).values()].map((group) => ({
    entity: group[0].entity,
    shardKeys: group[0].shardKeys,
    rows: group,
  }));
}
