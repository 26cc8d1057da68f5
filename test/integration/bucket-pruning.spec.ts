import { beforeEach, describe, expect, it } from 'vitest';
import { CounterBucket, CounterRollingWindow } from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import type { Granularity } from '../../lib/model/time-bucket.js';
import { RollingUpkeep } from '../../lib/windows/rolling.upkeep.js';
import { DATABASES } from '../../support/databases.js';
import { RankedPost, RankedTopic, ROLLING_ENTITIES } from '../fixtures/rolling-entities.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { clearWindowTables, DAY, HOUR } from '../support/rolling-tables.js';

const HOUR_RETENTION_MS = 8 * DAY * 1_000;
const DAY_RETENTION_MS = 30 * DAY * 1_000;
/** A time in the middle of an hour, so that hours and days do not start at it. */
const NOW_MS = Date.UTC(2026, 10, 20, 10, 30);
const NOW = NOW_MS / 1_000;
/** The oldest start a window may have, per granularity (see `checkRetention`), at NOW. */
const KEPT_HOURS_FROM = Math.floor((NOW - HOUR_RETENTION_MS / 1_000) / HOUR) * HOUR;
const KEPT_DAYS_FROM = Math.floor((NOW - DAY_RETENTION_MS / 1_000) / DAY) * DAY;

// The flush deletes buckets older than bucketRetentionMs, less one bucket (a window checked a moment ago
// may still read it), a thousand at a time, and never those a rolling window still counts. The hours of
// a counter that also keeps days are rolled up into them instead (bucket-roll-up.spec.ts): the hours
// deleted here are those of RankedTopic, which keeps hours only.
describe.each(DATABASES)('bucket pruning on %s', (database) => {
  const suite = useCounterSuite(
    database,
    'pruning',
    { bucketRetentionMs: { hour: HOUR_RETENTION_MS, day: DAY_RETENTION_MS } },
    1,
    ROLLING_ENTITIES,
  );
  let upkeep: RollingUpkeep;
  /** RankedPost's key: view_count keeps hours and days. */
  let entity: string;
  /** RankedTopic's key: view_count keeps hours only. */
  let topics: string;
  const buckets = () => suite.counter.dataSource.getRepository(CounterBucket);

  beforeEach(async () => {
    upkeep = suite.counter.app.get(RollingUpkeep);
    entity = suite.counter.app.get(CounterRegistry).get(RankedPost).key;
    topics = suite.counter.app.get(CounterRegistry).get(RankedTopic).key;
    await clearWindowTables(suite.counter.dataSource);
  });

  /** Stores one bucket of view_count per start, of row `rowId` of `of` (RankedPost's key by default). */
  const store = async (granularity: Granularity, starts: number[], of = entity, rowId = '1') => {
    const rows = starts.map((start) => ({
      entity: of,
      counter: 'view_count',
      rowId,
      granularity,
      start: String(start),
      value: '1',
    }));
    for (let at = 0; at < rows.length; at += 500) await buckets().insert(rows.slice(at, at + 500));
  };
  const starts = async (granularity: Granularity) =>
    (await buckets().find({ where: { granularity }, order: { start: 'ASC' } })).map((row) => Number(row.start));

  it('deletes the buckets that start before the oldest a window may start at, less one bucket', async () => {
    await store(
      'hour',
      [-3, -2, -1, 0, 1].map((n) => KEPT_HOURS_FROM + n * HOUR),
      topics,
    );
    await store(
      'day',
      [-3, -2, -1, 0].map((n) => KEPT_DAYS_FROM + n * DAY),
    );

    expect(await upkeep.prune(NOW_MS)).toBe(4);

    expect(await starts('hour')).toEqual([-1, 0, 1].map((n) => KEPT_HOURS_FROM + n * HOUR));
    expect(await starts('day')).toEqual([-1, 0].map((n) => KEPT_DAYS_FROM + n * DAY));
    expect(await upkeep.prune(NOW_MS)).toBe(0);
  });

  it('deletes the buckets of counters no longer declared once past the longest retention', async () => {
    const keptFrom = KEPT_DAYS_FROM - DAY;
    const gone = async (counter: string, of: string) => {
      for (const granularity of ['hour', 'day'] as const) {
        await buckets().insert(
          [keptFrom - 2 * DAY, keptFrom - DAY, keptFrom].map((start) => ({
            entity: of,
            counter,
            rowId: '7',
            granularity,
            start: String(start),
            value: '1',
          })),
        );
      }
    };
    await gone('removed_count', entity);
    await gone('view_count', 'no_such_table');

    expect(await upkeep.prune(NOW_MS)).toBe(8);

    const left = (await buckets().find()).map((row) => `${row.entity} ${row.counter} ${row.granularity} ${row.start}`);
    expect(left.sort()).toEqual(
      [
        `no_such_table view_count day ${keptFrom}`,
        `no_such_table view_count hour ${keptFrom}`,
        `${entity} removed_count day ${keptFrom}`,
        `${entity} removed_count hour ${keptFrom}`,
      ].sort(),
    );
  });

  it('deletes a thousand buckets a statement, ten statements a granularity at most', async () => {
    const old = Array.from({ length: 10_500 }, (_, n) => KEPT_HOURS_FROM - 2 * HOUR - n * HOUR);
    await store('hour', old, topics);
    expect(await upkeep.prune(NOW_MS)).toBe(10_000);
    expect(await buckets().count()).toBe(500);
    expect(await upkeep.prune(NOW_MS)).toBe(500);
    expect(await buckets().count()).toBe(0);
  });

  it('never deletes a bucket that a rolling window still counts', async () => {
    const windowStart = KEPT_HOURS_FROM - 5 * HOUR;
    await suite.counter.dataSource.getRepository(CounterRollingWindow).insert([
      { entity: topics, counter: 'view_count', window: '3h', from: String(windowStart) },
      // A window no instance has moved for a day is dropped first, and holds nothing back then.
      { entity: topics, counter: 'view_count', window: '48h', from: String(windowStart - 10 * HOUR) },
      // Nor does one of another counter.
      { entity, counter: 'view_count', window: '24h', from: String(windowStart - 10 * HOUR) },
    ]);
    await store(
      'hour',
      [-7, -6, -5, -4, -1, 0].map((n) => KEPT_HOURS_FROM + n * HOUR),
      topics,
    );

    expect(await upkeep.dropAbandoned(NOW_MS)).toBe(1);
    expect(await upkeep.prune(NOW_MS)).toBe(2);

    expect(await starts('hour')).toEqual([-5, -4, -1, 0].map((n) => KEPT_HOURS_FROM + n * HOUR));
  });

  it('keeps the buckets a stored window counts that this instance does not declare', async () => {
    // Another instance declares '10d' on RankedTopic's view_count: the window starts past the hours kept.
    const from = KEPT_HOURS_FROM - 5 * HOUR;
    await suite.counter.dataSource
      .getRepository(CounterRollingWindow)
      .insert({ entity: topics, counter: 'view_count', window: '10d', from: String(from) });
    await store(
      'hour',
      [-7, -6, -5, -4, 0].map((n) => KEPT_HOURS_FROM + n * HOUR),
      topics,
    );

    expect(await upkeep.prune(NOW_MS)).toBe(2);

    expect(await starts('hour')).toEqual([-5, -4, 0].map((n) => KEPT_HOURS_FROM + n * HOUR));
  });

  it('prunes after a flush that went well, at most every few minutes', async () => {
    const current = () => Math.floor((Date.now() - HOUR_RETENTION_MS) / 1_000 / HOUR) * HOUR;
    await store('hour', [current() - 3 * HOUR], topics);
    expect((await suite.counter.counters.flush()).error).toBeUndefined();
    expect(await buckets().count()).toBe(0);

    await store('hour', [current() - 3 * HOUR], topics);
    expect((await suite.counter.counters.flush()).error).toBeUndefined();
    expect(await buckets().count()).toBe(1);
  });
});
