import { Inject, Injectable, Logger } from '@nestjs/common';
import { COUNTER_OPTIONS } from '../counter.constants.js';
import { CounterRegistry } from '../counter.registry.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { rollingFrom, type RollingWindow } from '../model/rolling-window.js';
import { GRANULARITIES, GRANULARITY_SECONDS, bucketStart, type Granularity } from '../model/time-bucket.js';
import { rollUpHours } from '../sql/bucket-roll-up.js';
import { CounterDatabase } from '../sql/counter.database.js';
import { WINDOW_MESSAGES } from './window.messages.js';
import { parseRolling } from './declared-rolling.js';
import { oldestKeptStart } from './window.plan.js';

/** How often an instance prunes buckets, at most. */
const PRUNE_INTERVAL_MS = 5 * 60_000;
/** Buckets one pruning statement deletes, at most: short statements hold few locks. */
const PRUNE_BATCH = 1_000;
/** Pruning statements per granularity per pruning, at most; what is left waits for the next. */
const PRUNE_STATEMENTS = 10;
const HOUR_MS = 3_600_000;
/**
 * How far behind where it would start now a stored window this instance does not declare may be before
 * it counts as abandoned: an instance that declares it moves it every hour.
 */
const ABANDONED_AFTER_S = GRANULARITY_SECONDS.day;

/**
 * The upkeep of windowed counters after a flush that went well: moves rolling windows on as time passes
 * (once per hour boundary, each window in a transaction of its own), and deletes buckets older than
 * `bucketRetentionMs`, a few at a time, never those a rolling window still counts. A failure is logged;
 * a later flush tries again.
 */
@Injectable()
export class RollingUpkeep {
  /** The hour (ms / HOUR_MS) this instance last moved windows in; -1: not yet. */
  private advancedInHour = -1;
  /** When this instance last pruned buckets (0: not yet, so its first flush that goes well does). */
  private lastPrunedAt = 0;
  private readonly logger = new Logger('CounterFlush');

  constructor(
    private readonly registry: CounterRegistry,
    private readonly database: CounterDatabase,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {}

  /** Called after each flush that went well. */
  async afterFlush(): Promise<void> {
    await this.advanceWhenDue();
    await this.pruneWhenDue();
  }

  /**
   * Moves every declared rolling window to where it starts at `nowMs` (see CounterRolling.advance);
   * returns how many moved.
   */
  async advance(nowMs: number): Promise<number> {
    let moved = 0;
    for (const { entity, field, window } of this.rollingWindows()) {
      if (await this.advanceWindow(entity, field, window, nowMs)) moved++;
    }
    return moved;
  }

  /** Moves one rolling window to where it starts at `nowMs`, if it is behind; whether it moved. */
  advanceWindow(entity: CountedEntity, field: CounterField, window: RollingWindow, nowMs: number): Promise<boolean> {
    const key = { entity: entity.key, counter: field.name, window: window.name };
    const want = rollingFrom(window, field.windows[0], nowMs);
    return this.database.transaction('moving a rolling window', (runner, dialect) =>
      this.database.rolling.advance(runner, dialect, this.database.buckets.table(), key, field, want),
    );
  }

  /**
   * Drops the stored windows this instance does not declare that no instance moves any more: those that
   * start more than ABANDONED_AFTER_S before where they would start now (see CounterRolling.drop). Until
   * then the flush adds to them and pruning keeps their buckets, since another instance of a deployment
   * being rolled out may declare them. Returns how many it dropped.
   */
  async dropAbandoned(nowMs: number): Promise<number> {
    const declared = new Set(
      this.rollingWindows().map(({ entity, field, window }) => windowKey(entity.key, field.name, window.name)),
    );
    let dropped = 0;
    for (const stored of await this.database.rolling.stored()) {
      const window = parseRolling(stored.window);
      if (!window || declared.has(windowKey(stored.entity, stored.counter, stored.window))) continue;
      // By days, the earlier of the starts any counter's finest granularity gives.
      const before = rollingFrom(window, 'day', nowMs) - ABANDONED_AFTER_S;
      if (stored.start >= before) continue;
      const { start: _start, ...key } = stored;
      const done = await this.database.transaction('dropping an abandoned rolling window', (runner, dialect) =>
        this.database.rolling.drop(runner, dialect, key, before),
      );
      if (done) dropped++;
    }
    return dropped;
  }

  /**
   * Per windowed counter, PRUNE_BATCH buckets at a time, at most PRUNE_STATEMENTS times per granularity:
   * rolls its hour buckets up into its day buckets once their whole day is a day past the hours'
   * retention (a window's hours at its edges are never in a day row, see `storedRanges`), those past the
   * days' retention deleted instead, or deletes
   * those of its finest granularity that start before `keptFrom - length` (`keptFrom`: the oldest start
   * a window may have, see `checkRetention`; the bucket before it may still be read by a window that
   * began a moment ago), never those a rolling window still counts; then deletes its coarser buckets the
   * same way. Then deletes any bucket past the longest retention, whatever its counter. Returns how many
   * buckets it deleted or rolled up.
   */
  async prune(nowMs: number): Promise<number> {
    const starts = this.keepsSums() ? await this.storedStarts() : new Map<string, number>();
    let deleted = 0;
    for (const entity of this.registry.all()) {
      for (const field of entity.counters) {
        if (field.windows.length === 0) continue;
        const [finest, ...coarser] = field.windows;
        const key = { entity: entity.key, counter: field.name };
        const before = this.prunedBefore(entity, field, finest, nowMs, starts);
        if (finest === 'hour' && coarser.includes('day')) {
          // Hours whose day is past the days' retention go at once, rather than into a day pruned next.
          const daysBefore = this.prunedBefore(entity, field, 'day', nowMs, starts);
          deleted += await this.inBatches((limit) =>
            this.database.pruneBuckets({ ...key, granularity: finest }, Math.min(daysBefore, before), limit),
          );
          const rolledBefore = bucketStart('day', before) - GRANULARITY_SECONDS.day;
          deleted += await this.inBatches((limit) =>
            this.database.transaction('rolling hour buckets up', (runner, dialect) =>
              rollUpHours(runner, dialect, this.database.buckets.table(), key, rolledBefore, limit),
            ),
          );
        } else {
          deleted += await this.inBatches((limit) =>
            this.database.pruneBuckets({ ...key, granularity: finest }, before, limit),
          );
        }
        for (const granularity of coarser) {
          const coarserBefore = this.prunedBefore(entity, field, granularity, nowMs, starts);
          deleted += await this.inBatches((limit) =>
            this.database.pruneBuckets({ ...key, granularity }, coarserBefore, limit),
          );
        }
      }
    }
    // Counters no longer declared (or of entities gone) have no pass of their own: theirs go once past
    // the longest retention, which no declared counter's buckets outlive.
    const longest = Math.max(...GRANULARITIES.map((granularity) => this.options.bucketRetentionMs[granularity]));
    const before = oldestKeptStart('day', longest, nowMs) - GRANULARITY_SECONDS.day;
    for (const granularity of GRANULARITIES) {
      deleted += await this.inBatches((limit) => this.database.pruneBuckets({ granularity }, before, limit));
    }
    return deleted;
  }

  /** Runs `statement` (which takes at most `limit` buckets) until it takes fewer, PRUNE_STATEMENTS times at most. */
  private async inBatches(statement: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    for (let run = 0; run < PRUNE_STATEMENTS; run++) {
      const count = await statement(PRUNE_BATCH);
      total += count;
      if (count < PRUNE_BATCH) break;
    }
    return total;
  }

  private async advanceWhenDue(): Promise<void> {
    const hour = Math.floor(Date.now() / HOUR_MS);
    if (hour === this.advancedInHour || !this.keepsSums()) return;
    try {
      await this.advance(Date.now());
      await this.dropAbandoned(Date.now());
      this.advancedInHour = hour;
    } catch (error) {
      this.logger.warn(WINDOW_MESSAGES.rollingAdvanceFailed((error as Error).message));
    }
  }

  private async pruneWhenDue(): Promise<void> {
    if (Date.now() - this.lastPrunedAt < PRUNE_INTERVAL_MS) return;
    if (!this.registry.all().some((entity) => entity.counters.some((counter) => counter.windows.length > 0))) return;
    this.lastPrunedAt = Date.now();
    await this.prune(Date.now()).catch((error: Error) =>
      this.logger.warn(WINDOW_MESSAGES.bucketPruneFailed(error.message)),
    );
  }

  /**
   * The start before which a counter's buckets of `granularity` go: `starts` are the stored rolling
   * windows' (see `prune`), whose buckets stay.
   */
  private prunedBefore(
    entity: CountedEntity,
    field: CounterField,
    granularity: Granularity,
    nowMs: number,
    starts: Map<string, number>,
  ): number {
    const keptFrom = oldestKeptStart(granularity, this.options.bucketRetentionMs[granularity], nowMs);
    let before = keptFrom - GRANULARITY_SECONDS[granularity];
    if (field.windows[0] !== granularity) return before;
    // Every stored window of the counter, declared here or not: the flush keeps the sums of all.
    for (const [key, start] of starts) {
      if (key.startsWith(windowKey(entity.key, field.name, ''))) before = Math.min(before, start);
    }
    return before;
  }

  /** Whether the flush keeps rolling sums of any entity here (CounterRolling.keepsSumsOf). */
  private keepsSums(): boolean {
    return this.registry.all().some((entity) => this.database.rolling.keepsSumsOf(entity));
  }

  /** Every stored window's start, by `${entity} ${counter} ${window}`. */
  private async storedStarts(): Promise<Map<string, number>> {
    const stored = await this.database.rolling.stored();
    return new Map(stored.map((window) => [windowKey(window.entity, window.counter, window.window), window.start]));
  }

  private rollingWindows(): Array<{ entity: CountedEntity; field: CounterField; window: RollingWindow }> {
    return this.registry
      .all()
      .flatMap((entity) =>
        entity.counters.flatMap((field) => field.rolling.map((window) => ({ entity, field, window }))),
      );
  }
}

/** A stored window's key in `storedStarts`. */
function windowKey(entity: string, counter: string, window: string): string {
  return `${entity} ${counter} ${window}`;
}
