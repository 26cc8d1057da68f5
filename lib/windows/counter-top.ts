import { Inject, Injectable } from '@nestjs/common';
import { COUNTER_OPTIONS } from '../counter.constants.js';
import { CounterRegistry } from '../counter.registry.js';
import { InvalidCounterOptionError } from '../exceptions/invalid-counter-option.error.js';
import type { EntityClass } from '../interfaces/entity-class.interface.js';
import type { CounterTopRow, CounterTopWindow } from '../interfaces/counter-window.interface.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { rollingFrom, type RollingWindow } from '../model/rolling-window.js';
import { toRowId } from '../model/row-id.js';
import type { RankedRow } from '../sql/counter-rolling.js';
import { CounterDatabase } from '../sql/counter.database.js';
import { RollingUpkeep } from './rolling.upkeep.js';
import { WINDOW_MESSAGES } from './window.messages.js';
import { checkRetention, coveringRanges, windowBounds } from './window.plan.js';

/** The most rows `top` gives. */
const MOST_ROWS = 1_000;

/**
 * The rows of a windowed counter with the highest net change over a window, as of the last flush. A
 * window up to now that is one of the counter's rolling windows reads their sums by index; any other
 * adds up buckets.
 */
@Injectable()
export class CounterTop {
  constructor(
    private readonly registry: CounterRegistry,
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
    const ranked = rolling && (await this.fromRollingSums(counted, field, rolling, bounds.from, limit, now));
    if (ranked) return ranked.map((row) => this.topRow(counted, row));
    const ranges = coveringRanges(field.windows, bounds);
    checkRetention(ranges, this.options.bucketRetentionMs, now);
    const summed = await this.database.read(counted, 'ranking rows', () =>
      this.database.buckets.top(counted, field, ranges, limit),
    );
    return summed.map((row) => this.topRow(counted, row));
  }

  /**
   * The rolling window's top rows once its start is `want` (moving it there first if behind); undefined
   * when the window has no row yet (no flush since it was declared) or has moved past `want` meanwhile:
   * the buckets then answer.
   */
  private async fromRollingSums(
    entity: CountedEntity,
    field: CounterField,
    window: RollingWindow,
    want: number,
    limit: number,
    nowMs: number,
  ): Promise<RankedRow[] | undefined> {
    const key = { entity: entity.key, counter: field.name, window: window.name };
    const { rolling } = this.database;
    return this.database.read(entity, 'ranking rows', async () => {
      const before = await rolling.start(key);
      if (before === undefined) return undefined;
      if (before < want) await this.upkeep.advanceWindow(entity, field, window, nowMs);
      const rows = await rolling.top(entity, key, limit);
      // The start only moves on: the same after the read as the goal, it was so during the read too.
      return (await rolling.start(key)) === want ? rows : undefined;
    });
  }

  private topRow(entity: CountedEntity, row: RankedRow): CounterTopRow {
    return { id: toRowId(entity, row.rowId).sql, value: row.value };
  }
}
