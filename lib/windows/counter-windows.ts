import { Inject, Injectable } from '@nestjs/common';
import { COUNTER_OPTIONS } from '../counter.constants.js';
import { CounterRegistry } from '../counter.registry.js';
import { CounterSeedContentionError } from '../exceptions/counter-seed-contention.error.js';
import { InvalidCounterOptionError } from '../exceptions/invalid-counter-option.error.js';
import type { EntityClass } from '../interfaces/entity-class.interface.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { toRowId, type RowId } from '../model/row-id.js';
import { GRANULARITY_SECONDS, bucketKey, type BucketRange } from '../model/time-bucket.js';
import { BucketStore } from '../redis/bucket.store.js';
import { CounterKeys } from '../redis/counter.keys.js';
import { SeedRetry } from '../seed.retry.js';
import { CounterDatabase } from '../sql/counter.database.js';
import { unlessStoreUnavailable } from './unless-store-unavailable.js';
import { WINDOW_MESSAGES } from './window.messages.js';
import { bucketStarts, checkRetention, coveringRanges, storedRanges, windowBounds } from './window.plan.js';
import type { CounterBucketValue, CounterSeriesWindow, CounterWindow } from '../interfaces/counter-window.interface.js';

/**
 * Counts over time of windowed counters, live: the buckets the database has plus the changes of them
 * still in Redis. The two are read apart, so a flush may move changes from one to the other meanwhile:
 * the read of Redis comes with the shard's version (generation, batch id, and the batch's size, which a
 * give-back shrinks), the database tells in the same statement whether it has that batch, and Redis is
 * asked again afterwards; if the version moved, the read starts over.
 */
@Injectable()
export class CounterWindows {
  constructor(
    private readonly registry: CounterRegistry,
    private readonly keys: CounterKeys,
    private readonly store: BucketStore,
    private readonly database: CounterDatabase,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {}

  /** The counter's net change over the window (see `CounterService.count`). */
  async count(entity: EntityClass, id: string | number, counter: string, window: CounterWindow): Promise<number> {
    const { counted, field, rowId } = this.address(entity, id, counter);
    const now = Date.now();
    const ranges = coveringRanges(field.windows, windowBounds(field.windows[0], window, now));
    checkRetention(ranges, this.options.bucketRetentionMs, now);
    let total = 0;
    for (const value of (await this.liveValues(counted, field, rowId, storedRanges(field.windows, ranges))).values())
      total += value;
    return total;
  }

  /** The counter's net change per bucket of `granularity` over the window (see `CounterService.series`). */
  async series(
    entity: EntityClass,
    id: string | number,
    counter: string,
    { granularity, ...window }: CounterSeriesWindow,
  ): Promise<CounterBucketValue[]> {
    const { counted, field, rowId } = this.address(entity, id, counter);
    if (!field.windows.includes(granularity)) {
      throw new InvalidCounterOptionError(
        'granularity',
        WINDOW_MESSAGES.granularityNotKept(counted.name, field.name, granularity, field.windows),
      );
    }
    const now = Date.now();
    const bounds = windowBounds(granularity, window, now);
    checkRetention([bounds], this.options.bucketRetentionMs, now);
    const stored = storedRanges(field.windows, [bounds]);
    const values = await this.liveValues(counted, field, rowId, stored);
    const finest = stored[0].granularity;
    const finestPerBucket = GRANULARITY_SECONDS[granularity] / GRANULARITY_SECONDS[finest];
    return bucketStarts(bounds).map((start) => {
      // A coarser bucket is its own row (the finest ones rolled up into it) plus the finest ones not yet.
      let value = granularity === finest ? 0 : (values.get(bucketKey(granularity, start)) ?? 0);
      for (let b = 0; b < finestPerBucket; b++) {
        value += values.get(bucketKey(finest, start + b * GRANULARITY_SECONDS[finest])) ?? 0;
      }
      return { start: new Date(start * 1_000), value };
    });
  }

  private address(entity: EntityClass, id: unknown, counter: string) {
    const counted = this.registry.get(entity);
    const field = this.registry.counter(counted, counter);
    const rowId = toRowId(counted, id);
    if (field.windows.length === 0) {
      throw new InvalidCounterOptionError('windows', WINDOW_MESSAGES.notWindowed(counted.name, field.name));
    }
    return { counted, field, rowId };
  }

  /**
   * Per bucket of `ranges` (`storedRanges`: the finest first; keyed by `bucketKey`), its live value. With
   * Redis unreachable, the values the database has: as of the last flush, as `get` falls back to the
   * database value.
   */
  private async liveValues(
    counted: CountedEntity,
    field: CounterField,
    rowId: RowId,
    ranges: BucketRange[],
  ): Promise<Map<string, number>> {
    const encodedId = this.keys.encodeId(rowId.text);
    const shard = this.keys.shard(counted.key, this.keys.shardOf(encodedId));
    // Redis holds the finest buckets only (CounterField.scriptName).
    const finest = ranges[0];
    const retry = new SeedRetry();
    for (;;) {
      const before = await unlessStoreUnavailable(() => this.store.read(shard, encodedId, field.name, finest));
      if (!before) return (await this.database.readBuckets(counted, field, rowId.sql, ranges, undefined)).values;
      const stored = await this.database.readBuckets(counted, field, rowId.sql, ranges, before.batchId || undefined);
      const after = await unlessStoreUnavailable(() => this.store.read(shard, encodedId, field.name));
      if (!after) return stored.values;
      if (after.version === before.version) {
        const values = new Map(stored.values);
        for (const [start, { waiting, inFlight }] of before.changes) {
          const key = bucketKey(finest.granularity, start);
          values.set(key, (values.get(key) ?? 0) + waiting + (stored.batchApplied ? 0 : inFlight));
        }
        return values;
      }
      if (!(await retry.next())) {
        throw new CounterSeedContentionError(WINDOW_MESSAGES.windowContended(counted.name, rowId.text), {
          entity: counted.name,
          id: rowId.text,
        });
      }
    }
  }
}
