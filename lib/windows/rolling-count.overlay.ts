import { Injectable, Logger } from '@nestjs/common';
import { chunks, groupBy } from '../collections.js';
import type { CountedInstance } from '../counted-instances.js';
import { MAX_ROWS_PER_CALL } from '../counter.constants.js';
import { CounterSeedContentionError } from '../exceptions/counter-seed-contention.error.js';
import type { CountedEntity } from '../model/counted-entity.js';
import { canonicalIdText, toRowId } from '../model/row-id.js';
import { CounterKeys, type ShardKeys } from '../redis/counter.keys.js';
import { RollingCountStore, type WaitingShardChanges } from '../redis/rolling-count.store.js';
import { SeedRetry } from '../seed.retry.js';
import type { RollingCountWindow, StoredRollingCounts } from '../sql/rolling-count.query.js';
import { CounterDatabase } from '../sql/counter.database.js';
import { unlessStoreUnavailable } from './unless-store-unavailable.js';
import { WINDOW_MESSAGES } from './window.messages.js';
import { windowBounds } from './window.plan.js';

/** One script call's rows: of one shard, at most MAX_ROWS_PER_CALL. */
interface ShardCall {
  shard: ShardKeys;
  /** Ids as text, as the database keeps them. */
  ids: string[];
  encodedIds: string[];
}

/** Per window (in the order of the entity type's windows), a row's count by id as text. */
type RollingCounts = Array<Map<string, number>>;

/** The rolling counts one entity type of a value needs, and where they go. */
interface EntityRead {
  entity: CountedEntity;
  windows: RollingCountWindow[];
  /** Ids as text, as the database keeps them. */
  ids: string[];
  calls: ShardCall[];
  instances: CountedInstance[];
}

/**
 * Writes into `@RollingCount()` properties what `count` gives over their windows, live, for all the
 * entities of a value at once: the changes still in Redis in one script call per shard touched, all
 * entity types' in one pipeline per node, and per entity type the database's sums in one statement. As
 * `count` does, the read of Redis comes with each shard's version, the statement tells which batches in
 * flight the database has, and Redis is asked again afterwards; an entity type whose shards moved is
 * read again.
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
   * values the database has (as of the last flush); on any other failure the properties keep the
   * values they were loaded with (those of an entity type, when only its statement failed), and a
   * warning is logged.
   */
  async overlay(instances: readonly CountedInstance[]): Promise<void> {
    try {
      const reads = this.plan(instances);
      if (reads.length === 0) return;
      const counts = await this.read(reads);
      reads.forEach((read, r) => {
        if (counts[r]) write(read, counts[r]);
      });
    } catch (error) {
      this.warn(error);
    }
  }

  private plan(instances: readonly CountedInstance[]): EntityRead[] {
    const nowMs = Date.now();
    const reads: EntityRead[] = [];
    const byEntity = groupBy(
      instances.filter(({ entity }) => entity.rollingCounts.length > 0),
      ({ entity }) => entity,
    );
    for (const [entity, group] of byEntity) {
      const ids = new Map<string, string>();
      for (const { instance } of group) {
        const text = idTextOf(entity, instance);
        if (text !== undefined && !ids.has(text)) ids.set(text, this.keys.encodeId(text));
      }
      if (ids.size === 0) continue;
      const windows = entityWindows(entity, nowMs);
      reads.push({
        entity,
        windows,
        ids: [...ids.keys()],
        calls: shardCalls(this.keys, entity, ids),
        instances: group,
      });
    }
    return reads;
  }

  /** Per entity type, its live counts; undefined for one whose read failed (and was logged). */
  private async read(reads: EntityRead[]): Promise<Array<RollingCounts | undefined>> {
    const counts: Array<RollingCounts | undefined> = reads.map(() => undefined);
    let pending = reads.map((_, r) => r);
    const retry = new SeedRetry();
    for (;;) {
      const before = await unlessStoreUnavailable(() =>
        Promise.all(pending.map((r) => this.readShards(reads[r], true))),
      );
      const stored = await Promise.allSettled(
        pending.map((r, p) => {
          const { entity, windows, ids } = reads[r];
          const batchIds = [...new Set((before?.[p] ?? []).map((shard) => shard.batchId).filter((id) => id !== ''))];
          return this.database.read(entity, 'reading rolling counts', () =>
            this.database.rollingCounts.read(entity, windows, ids, batchIds),
          );
        }),
      );
      const after =
        before &&
        (await unlessStoreUnavailable(() => Promise.all(pending.map((r) => this.readShards(reads[r], false)))));
      const moved: number[] = [];
      pending.forEach((r, p) => {
        const result = stored[p];
        if (result.status === 'rejected') return this.warn(result.reason);
        // With Redis unreachable, the database's values: as of the last flush, as `count` answers then.
        if (!before || !after) counts[r] = result.value.values;
        else if (after[p].every((shard, c) => shard.version === before[p][c].version)) {
          counts[r] = merged(reads[r].calls, before[p], result.value);
        } else moved.push(r);
      });
      if (moved.length === 0) return counts;
      if (!(await retry.next())) {
        for (const r of moved) this.warn(contended(reads[r].entity));
        return counts;
      }
      pending = moved;
    }
  }

  /** Each shard call's waiting changes, or with `changes` false its version alone; sent in one turn. */
  private readShards(read: EntityRead, changes: boolean): Promise<WaitingShardChanges[]> {
    const ranges = changes
      ? read.windows.map(({ counter, from, to }) => ({
          counter: counter.name,
          granularity: counter.windows[0],
          from,
          to,
        }))
      : [];
    return Promise.all(read.calls.map((call) => this.store.read(call.shard, ranges, changes ? call.encodedIds : [])));
  }

  private warn(error: unknown): void {
    this.logger.warn(WINDOW_MESSAGES.rollingCountsFailed((error as Error).message));
  }
}

function contended(entity: CountedEntity): CounterSeedContentionError {
  return new CounterSeedContentionError(WINDOW_MESSAGES.rollingCountsContended(entity.name), { entity: entity.name });
}

/** An instance's id as text, as the database keeps it; undefined when it has none. */
function idTextOf(entity: CountedEntity, instance: Record<string, unknown>): string | undefined {
  const id = instance[entity.primary.propertyName];
  return id === undefined || id === null ? undefined : canonicalIdText(entity, toRowId(entity, id).sql);
}

/** Writes each instance's counts into its rolling count properties. */
function write({ entity, windows, instances }: EntityRead, counts: RollingCounts): void {
  const windowOf = entity.rollingCounts.map((field) =>
    windows.findIndex((window) => window.counter === field.counter && window.window === field.window),
  );
  for (const { instance } of instances) {
    const text = idTextOf(entity, instance);
    if (text === undefined) continue;
    entity.rollingCounts.forEach((field, f) => {
      instance[field.propertyName] = counts[windowOf[f]].get(text) ?? 0;
    });
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
 * flight count only if the statement that read the row did not find that batch in the ledger (which
 * counted them already).
 */
function merged(calls: ShardCall[], shards: WaitingShardChanges[], stored: StoredRollingCounts): RollingCounts {
  const counts = stored.values.map((values) => new Map(values));
  calls.forEach((call, c) => {
    const { batchId, rows } = shards[c];
    call.ids.forEach((id, r) =>
      rows[r].forEach(({ waiting, inFlight }, w) => {
        const change = waiting + (stored.applied.get(id)?.has(batchId) ? 0 : inFlight);
        if (change !== 0) counts[w].set(id, (counts[w].get(id) ?? 0) + change);
      }),
    );
  });
  return counts;
}
