import { Inject, Injectable } from '@nestjs/common';
import { COUNTER_OPTIONS } from '../counter.constants.js';
import { CounterRegistry } from '../counter.registry.js';
import { CounterSeedContentionError } from '../exceptions/counter-seed-contention.error.js';
import { InvalidCounterOptionError } from '../exceptions/invalid-counter-option.error.js';
import type { EntityClass } from '../interfaces/entity-class.interface.js';
import type { CounterTopRow, CounterTopWindow } from '../interfaces/counter-window.interface.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { rollingFrom, type RollingWindow } from '../model/rolling-window.js';
import { toRowId } from '../model/row-id.js';
import type { BucketRange } from '../model/time-bucket.js';
import { BucketScanStore, type BucketScanTarget } from '../redis/bucket-scan.store.js';
import { CounterKeys } from '../redis/counter.keys.js';
import { SeedRetry } from '../seed.retry.js';
import type { RankedRow } from '../sql/counter-rolling.js';
import { compareRanked, type RankedSource, type StoredTop } from '../sql/counter-top.query.js';
import { CounterDatabase } from '../sql/counter.database.js';
import { RollingUpkeep } from './rolling.upkeep.js';
import { readVersions, readWaitingChanges, type WaitingChanges } from './waiting-changes.reader.js';
import { unlessStoreUnavailable } from './unless-store-unavailable.js';
import { WINDOW_MESSAGES } from './window.messages.js';
import { checkRetention, coveringRanges, storedRanges, windowBounds } from './window.plan.js';

/** The most rows `top` gives. */
const MOST_ROWS = 1_000;

/** A ranking's flushed values, and for a rolling window the start its sums must have. */
type RankingPlan = { source: RankedSource; rolling?: { window: RollingWindow; from: number } };

/**
 * The rows of a windowed counter with the highest net change over a window, live: the database's values
 * plus the changes of the counter's finest buckets in the window that still wait in Redis, in every shard
 * of the entity. A window up to now that is one of the counter's rolling windows reads their sums by
 * index; any other adds up buckets. Redis and the database are read apart, so as `count` does, the read
 * of Redis comes with each shard's version, the database tells in the same statement which batches in
 * flight it has, and Redis is asked again afterwards; if a shard moved, the read starts over.
 */
@Injectable()
export class CounterTop {
  constructor(
    private readonly registry: CounterRegistry,
    private readonly keys: CounterKeys,
    private readonly store: BucketScanStore,
    private readonly database: CounterDatabase,
    private readonly upkeep: RollingUpkeep,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {}

  /** See `CounterService.top`. */
  async top(entity: EntityClass, counter: string, { limit, ...window }: CounterTopWindow): Promise<CounterTopRow[]> {
    const counted = this.registry.get(entity);
    const field = this.registry.counter(counted, counter);
    if (field.windows.length === 0) {
      throw new InvalidCounterOptionError('windows', WINDOW_MESSAGES.notWindowed(counted.name, field.name));
    }
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MOST_ROWS) {
      throw new InvalidCounterOptionError('limit', WINDOW_MESSAGES.badLimit(limit, MOST_ROWS));
    }
    const now = Date.now();
    const bounds = windowBounds(field.windows[0], window, now);
    const rolling =
      window.until === undefined
        ? field.rolling.find((declared) => rollingFrom(declared, field.windows[0], now) === bounds.from)
        : undefined;
    let plan: RankingPlan = rolling
      ? {
          source: { kind: 'rolling', key: { entity: counted.key, counter: field.name, window: rolling.name } },
          rolling: { window: rolling, from: bounds.from },
        }
      : this.summed(field, bounds, now);
    const shards = this.keys.shardsOf(counted.key);
    const retry = new SeedRetry();
    for (;;) {
      // A rolling window's sums count every bucket from its start on.
      const to = plan.rolling ? Number.MAX_SAFE_INTEGER : bounds.to;
      const target: BucketScanTarget = { counter: field.name, granularity: field.windows[0], from: bounds.from, to };
      const waiting = await unlessStoreUnavailable(() =>
        readWaitingChanges(this.store, this.keys, counted, shards, target),
      );
      if (waiting !== 'moved') {
        const candidates = waiting ? [...waiting.rows.keys()] : [];
        const count = limit + candidates.length;
        const stored = await this.stored(counted, field, plan, count, candidates, waiting?.batchIds ?? [], now);
        if (!stored) {
          // The rolling window has no sums yet, or moved on meanwhile: the buckets answer.
          plan = this.summed(field, bounds, now);
          continue;
        }
        // With Redis unreachable, the database's values: as of the last flush, as `count` answers then.
        if (!waiting) return this.rows(counted, stored.ranked.slice(0, limit));
        const after = await unlessStoreUnavailable(() => readVersions(this.store, shards, target));
        if (!after) return this.rows(counted, stored.ranked.slice(0, limit));
        if (after.every((version, shard) => version === waiting.versions[shard])) {
          return this.rows(counted, merged(counted, stored, waiting, limit));
        }
      }
      if (!(await retry.next())) {
        throw new CounterSeedContentionError(WINDOW_MESSAGES.topContended(counted.name, field.name), {
          entity: counted.name,
        });
      }
    }
  }

  /** The plan that adds up buckets over `bounds`; throws when they reach back past those kept. */
  private summed(field: CounterField, bounds: BucketRange, nowMs: number): RankingPlan {
    const ranges = coveringRanges(field.windows, bounds);
    checkRetention(ranges, this.options.bucketRetentionMs, nowMs);
    return { source: { kind: 'buckets', counter: field, ranges: storedRanges(field.windows, ranges) } };
  }

  /**
   * What the database has of the ranking (see CounterTopQuery.read). For a rolling window, once its start
   * is the plan's (moving it there first if behind); undefined when the window has no row yet (no flush
   * since it was declared) or has moved past it meanwhile.
   */
  private stored(
    entity: CountedEntity,
    field: CounterField,
    plan: RankingPlan,
    count: number,
    candidates: string[],
    batchIds: string[],
    nowMs: number,
  ): Promise<StoredTop | undefined> {
    const read = () => this.database.top.read(entity, plan.source, count, candidates, batchIds);
    const { rolling } = plan;
    if (!rolling || plan.source.kind !== 'rolling') return this.database.read(entity, 'ranking rows', read);
    const key = plan.source.key;
    const sums = this.database.rolling;
    return this.database.read(entity, 'ranking rows', async () => {
      const before = await sums.start(key);
      if (before === undefined) return undefined;
      if (before < rolling.from) await this.upkeep.advanceWindow(entity, field, rolling.window, nowMs);
      const stored = await read();
      // The start only moves on: the same after the read as the goal, it was so during the read too.
      return (await sums.start(key)) === rolling.from ? stored : undefined;
    });
  }

  private rows(entity: CountedEntity, ranked: RankedRow[]): CounterTopRow[] {
    return ranked.map((row) => ({ id: toRowId(entity, row.rowId).sql, value: row.value }));
  }
}

/**
 * The `limit` rows ranked highest once the waiting changes are added. A row without any keeps its
 * flushed value, so those that can rank are among the `limit` highest of them, which the database's
 * `limit + candidates` highest rows hold; each candidate counts its batch in flight only if the statement
 * that read its value did not find that batch in the ledger (which would have counted it already).
 */
function merged(entity: CountedEntity, stored: StoredTop, waiting: WaitingChanges, limit: number): RankedRow[] {
  const values = new Map<string, number>();
  for (const row of stored.ranked) if (!waiting.rows.has(row.rowId)) values.set(row.rowId, row.value);
  for (const [rowId, changes] of waiting.rows) {
    const flushed = stored.candidates.get(rowId)!;
    const inFlight = flushed.applied.has(changes.batchId) ? 0 : changes.inFlight;
    values.set(rowId, flushed.value + changes.waiting + inFlight);
  }
  return [...values]
    .map(([rowId, value]) => ({ rowId, value }))
    .filter((row) => row.value > 0)
    .sort(compareRanked(entity))
    .slice(0, limit);
}
