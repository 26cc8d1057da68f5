import { Injectable, Logger } from '@nestjs/common';
import { chunks, groupBy } from '../collections.js';
import type { CountedInstance } from '../counted-instances.js';
import { MAX_ROWS_PER_CALL } from '../counter.constants.js';
import { CounterSeedContentionError } from '../exceptions/counter-seed-contention.error.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import type { CountedEntity } from '../model/counted-entity.js';
import { canonicalIdText, toRowId } from '../model/row-id.js';
import { CounterKeys, type ShardKeys } from '../redis/counter.keys.js';
import { RollingCountStore, type WaitingShardChanges } from '../redis/rolling-count.store.js';
import { SeedRetry } from '../seed.retry.js';
import type { RollingCountWindow, StoredRollingCounts } from '../sql/rolling-count.query.js';
import { CounterDatabase } from '../sql/counter.database.js';
import { WINDOW_MESSAGES } from './window.messages.js';
import { windowBounds } from './window.plan.js';

/** One script call's rows: of one shard, at most MAX_ROWS_PER_CALL. */
interface ShardCall {
  shard: ShardKeys;
  /** Ids as text, as the database keeps them. */
  ids: string[];
  encodedIds: string[];
}

/** Per window (in the order of the entity's windows), a row's count by id as text. */
type RollingCounts = Array<Map<string, number>>;

/**
 * Writes into `@RollingCount()` properties what `count` gives over their windows, live, for all the
 * entities of a value at once: per entity type, the database's sums in one statement and the changes
 * still in Redis in one script call per shard touched (pipelined). As `count` does, the read of Redis
 * comes with each shard's version, the statement tells which batches in flight the database has, and
 * Redis is asked again afterwards; if a shard moved, the read starts over.
 */
@Injectable()
export class RollingCountOverlay {
  /** Warnings are logged under the name users call the overlay by. */
  private readonly logger = new Logger('CounterService');

  constructor(
    private readonly keys: CounterKeys,
    private readonly store: RollingCountStore,
    private readonly database: CounterDatabase,
  ) {}

  /**
   * Overlays the rolling counts of `instances`, in place; never rejects. With Redis unreachable, the
   * values the database has (as of the last flush); on any other failure an entity type's properties
   * keep the values they were loaded with, and a warning is logged.
   */
  async overlay(instances: readonly CountedInstance[]): Promise<void> {
    const byEntity = groupBy(
      instances.filter(({ entity }) => entity.rollingCounts.length > 0),
      ({ entity }) => entity,
    );
    await Promise.all(
      [...byEntity].map(([entity, group]) =>
        this.overlayEntity(entity, group).catch((error: Error) =>
          this.logger.warn(WINDOW_MESSAGES.rollingCountsFailed(error.message)),
        ),
      ),
    );
  }

  private async overlayEntity(entity: CountedEntity, group: CountedInstance[]): Promise<void> {
    const nowMs = Date.now();
    const windows = entityWindows(entity, nowMs);
    const ids = new Map<string, string>();
    for (const { instance } of group) {
      const id = instance[entity.primary.propertyName];
      if (id === undefined || id === null) continue;
      const text = canonicalIdText(entity, toRowId(entity, id).sql);
      if (!ids.has(text)) ids.set(text, this.keys.encodeId(text));
    }
    if (ids.size === 0) return;
    const counts = await this.read(entity, windows, ids);
    const windowOf = (field: CountedEntity['rollingCounts'][number]) =>
      windows.findIndex((window) => window.counter === field.counter && window.window === field.window);
    for (const { instance } of group) {
      const id = instance[entity.primary.propertyName];
      if (id === undefined || id === null) continue;
      const text = canonicalIdText(entity, toRowId(entity, id).sql);
      for (const field of entity.rollingCounts) instance[field.propertyName] = counts[windowOf(field)].get(text) ?? 0;
    }
  }

  /** The live counts of the rows of `ids` (encoded ids by id as text) over `windows`. */
  private async read(
    entity: CountedEntity,
    windows: RollingCountWindow[],
    ids: Map<string, string>,
  ): Promise<RollingCounts> {
    const calls = shardCalls(this.keys, entity, ids);
    const ranges = windows.map(({ counter, from, to }) => ({
      counter: counter.name,
      granularity: counter.windows[0],
      from,
      to,
    }));
    const retry = new SeedRetry();
    for (;;) {
      const before = await this.unlessUnavailable(() =>
        Promise.all(calls.map((call) => this.store.read(call.shard, ranges, call.encodedIds))),
      );
      const batchIds = [...new Set((before ?? []).map((shard) => shard.batchId).filter((id) => id !== ''))];
      const stored = await this.database.read(entity, 'reading rolling counts', () =>
        this.database.rollingCounts.read(entity, windows, [...ids.keys()], batchIds),
      );
      // With Redis unreachable, the database's values: as of the last flush, as `count` answers then.
      if (!before) return stored.values;
      const after = await this.unlessUnavailable(() =>
        Promise.all(calls.map((call) => this.store.read(call.shard, [], []))),
      );
      if (!after) return stored.values;
      if (after.every((shard, c) => shard.version === before[c].version)) return merged(calls, before, stored);
      if (!(await retry.next())) {
        throw new CounterSeedContentionError(WINDOW_MESSAGES.rollingCountsContended(entity.name), {
          entity: entity.name,
        });
      }
    }
  }

  /** `read`'s result; undefined when Redis is unreachable. */
  private async unlessUnavailable<T>(read: () => Promise<T>): Promise<T | undefined> {
    try {
      return await read();
    } catch (error) {
      if (error instanceof CounterStoreUnavailableError) return undefined;
      throw error;
    }
  }
}

/** The distinct windows of an entity's rolling counts, each over the buckets `count` adds up at `nowMs`. */
function entityWindows(entity: CountedEntity, nowMs: number): RollingCountWindow[] {
  const windows: RollingCountWindow[] = [];
  for (const { counter, window } of entity.rollingCounts) {
    if (windows.some((known) => known.counter === counter && known.window === window)) continue;
    const { from, to } = windowBounds(counter.windows[0], { since: nowMs - window.seconds * 1_000 }, nowMs);
    windows.push({ counter, window, from, to });
  }
  return windows;
}

/** The rows by shard, a call per MAX_ROWS_PER_CALL rows of a shard. */
function shardCalls(keys: CounterKeys, entity: CountedEntity, ids: Map<string, string>): ShardCall[] {
  const byShard = groupBy([...ids], ([, encodedId]) => keys.shardOf(encodedId));
  return [...byShard].flatMap(([shard, rows]) =>
    chunks(rows, MAX_ROWS_PER_CALL).map((chunk) => ({
      shard: keys.shard(entity.key, shard),
      ids: chunk.map(([id]) => id),
      encodedIds: chunk.map(([, encodedId]) => encodedId),
    })),
  );
}

/**
 * The database's values plus the changes waiting in Redis; a row's changes in its shard's batch in
 * flight count only if the statement did not find that batch in the ledger (which counted them already).
 */
function merged(calls: ShardCall[], shards: WaitingShardChanges[], stored: StoredRollingCounts): RollingCounts {
  const counts = stored.values.map((values) => new Map(values));
  calls.forEach((call, c) => {
    const { batchId, rows } = shards[c];
    const inFlightApplied = stored.applied.has(batchId);
    call.ids.forEach((id, r) =>
      rows[r].forEach(({ waiting, inFlight }, w) => {
        const change = waiting + (inFlightApplied ? 0 : inFlight);
        if (change !== 0) counts[w].set(id, (counts[w].get(id) ?? 0) + change);
      }),
    );
  });
  return counts;
}
