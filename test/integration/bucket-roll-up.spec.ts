import { beforeEach, describe, expect, it } from 'vitest';
import { CounterBucket, CounterRollingWindow } from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import type { Granularity } from '../../lib/model/time-bucket.js';
import { RollingUpkeep } from '../../lib/windows/rolling.upkeep.js';
import { DATABASES } from '../../support/databases.js';
import { RankedPost, RankedTopic, ROLLING_ENTITIES } from '../fixtures/rolling-entities.js';
import { Channel, Post, WINDOWED_ENTITIES } from '../fixtures/windowed-entities.js';
import { insideOneDay } from '../support/one-hour.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { clearWindowTables, DAY, HOUR } from '../support/rolling-tables.js';

const HOUR_RETENTION_MS = 8 * DAY * 1_000;
const DAY_RETENTION_MS = 30 * DAY * 1_000;
/** 2026-11-`day` 00:00 UTC, in Unix seconds. */
const NOV = (day: number) => Date.UTC(2026, 10, day) / 1_000;
/**
 * 2026-11-20 10:30 UTC: the oldest hour a window may start at is 11-12 10:00 (it holds the instant 8
 * days ago), the hour before it is kept, and the days a day before that one (up to 11-10) are rolled up.
 */
const NOW_MS = (NOV(20) + 10.5 * HOUR) * 1_000;

/** A stored bucket: entity key, counter, row, granularity, start, value. */
type Row = [entity: string, counter: string, rowId: string, granularity: Granularity, start: number, value: number];

// The upkeep rolls the hours of a counter that keeps hours and days up into its days, once their whole
// day is a day past the hours kept and before every rolling window's start: each day row then holds the
// sum of the hours it took, which are gone, so that a day (its row plus its hours left) reads the same
// before and after. A counter of hours only has its old hours deleted instead.
describe.each(DATABASES)('rolling hours up into days on %s', (database) => {
  const suite = useCounterSuite(
    database,
    'roll-up',
    { bucketRetentionMs: { hour: HOUR_RETENTION_MS, day: DAY_RETENTION_MS } },
    1,
    [...WINDOWED_ENTITIES, ...ROLLING_ENTITIES],
  );
  let upkeep: RollingUpkeep;
  /** Entity keys: Post (view_count of hours and days, like_count of days), Channel, RankedPost, RankedTopic. */
  let posts: string;
  let channels: string;
  let ranked: string;
  let topics: string;
  const buckets = () => suite.counter.dataSource.getRepository(CounterBucket);

  beforeEach(async () => {
    upkeep = suite.counter.app.get(RollingUpkeep);
    const registry = suite.counter.app.get(CounterRegistry);
    [posts, channels, ranked, topics] = [Post, Channel, RankedPost, RankedTopic].map(
      (entity) => registry.get(entity).key,
    );
    await clearWindowTables(suite.counter.dataSource);
  });

  const store = async (rows: Row[]) => {
    const entities = rows.map(([entity, counter, rowId, granularity, start, value]) => ({
      entity,
      counter,
      rowId,
      granularity,
      start: String(start),
      value: String(value),
    }));
    for (let at = 0; at < entities.length; at += 500) await buckets().insert(entities.slice(at, at + 500));
  };
  /** `rows` in one order, whatever the order they came in. */
  const sorted = (rows: Row[]) => rows.sort((a, b) => a.join(' ').localeCompare(b.join(' ')));
  /** Every stored bucket, as `store` takes them, `sorted`. */
  const stored = async (): Promise<Row[]> =>
    sorted(
      (await buckets().find()).map((row): Row => {
        const granularity = row.granularity as Granularity;
        return [row.entity, row.counter, row.rowId, granularity, Number(row.start), Number(row.value)];
      }),
    );

  it('adds the old hours up into their days, deletes them, and keeps the hours of the days after', async () => {
    await store([
      // Three hours, one negative: a day of 4.
      [posts, 'view_count', '1', 'hour', NOV(9), 3],
      [posts, 'view_count', '1', 'hour', NOV(9) + 5 * HOUR, -1],
      [posts, 'view_count', '1', 'hour', NOV(9) + 23 * HOUR, 2],
      // Added to the day row already there: 10 - 2.
      [posts, 'view_count', '1', 'day', NOV(10), 10],
      [posts, 'view_count', '1', 'hour', NOV(10), 5],
      [posts, 'view_count', '1', 'hour', NOV(10) + 12 * HOUR, -7],
      // 11-11 is the last day kept in hours, and 11-12 09:00 the last hour before the oldest kept.
      [posts, 'view_count', '1', 'hour', NOV(11), 1],
      [posts, 'view_count', '1', 'hour', NOV(11) + 23 * HOUR, 1],
      [posts, 'view_count', '1', 'hour', NOV(12) + 9 * HOUR, 1],
      // A negative day, and a day whose hours add up to 0: no row.
      [posts, 'view_count', '2', 'hour', NOV(10) + 3 * HOUR, -4],
      [posts, 'view_count', '2', 'hour', NOV(8) + HOUR, 2],
      [posts, 'view_count', '2', 'hour', NOV(8) + 2 * HOUR, -2],
      // A day-only counter's days stay as they are.
      [posts, 'like_count', '1', 'day', NOV(9), 6],
      // Another entity's counter of the same name goes to its own days.
      [channels, 'view_count', 'a:{b} c', 'hour', NOV(9) + 10 * HOUR, 9],
      // A counter of hours only: the old hours are deleted, the one before the oldest kept stays.
      [topics, 'view_count', 'x', 'hour', NOV(9) + 10 * HOUR, 1],
      [topics, 'view_count', 'x', 'hour', NOV(12) + 8 * HOUR, 1],
      [topics, 'view_count', 'x', 'hour', NOV(12) + 9 * HOUR, 1],
    ]);

    // Nine hours rolled up, two deleted.
    expect(await upkeep.prune(NOW_MS)).toBe(11);

    expect(await stored()).toEqual(
      sorted([
        [posts, 'view_count', '1', 'day', NOV(9), 4],
        [posts, 'view_count', '1', 'day', NOV(10), 8],
        [posts, 'view_count', '1', 'hour', NOV(11), 1],
        [posts, 'view_count', '1', 'hour', NOV(11) + 23 * HOUR, 1],
        [posts, 'view_count', '1', 'hour', NOV(12) + 9 * HOUR, 1],
        [posts, 'view_count', '2', 'day', NOV(10), -4],
        [posts, 'like_count', '1', 'day', NOV(9), 6],
        [channels, 'view_count', 'a:{b} c', 'day', NOV(9), 9],
        [topics, 'view_count', 'x', 'hour', NOV(12) + 9 * HOUR, 1],
      ]),
    );
    expect(await upkeep.prune(NOW_MS)).toBe(0);
  });

  it('adds up a day whose hours take two statements, a thousand hours each at most', async () => {
    // 48 rows × 24 hours: the first statement ends inside hour 20, among rows of the same start.
    const rows = Array.from({ length: 48 }, (_, index) => String(index + 1));
    const value = (row: number, hour: number) => row * 10 + hour - 12;
    await store([
      ...rows.flatMap((rowId) =>
        Array.from({ length: 24 }, (_, hour): Row => [
          posts,
          'view_count',
          rowId,
          'hour',
          NOV(9) + hour * HOUR,
          value(Number(rowId), hour),
        ]),
      ),
      [posts, 'view_count', '7', 'day', NOV(9), 1_000],
    ]);

    expect(await upkeep.prune(NOW_MS)).toBe(48 * 24);

    // Per row: 240 × row + (0 + … + 23) - 24 × 12.
    expect(await stored()).toEqual(
      sorted(
        rows.map((rowId): Row => {
          const sum = 240 * Number(rowId) + 276 - 288 + (rowId === '7' ? 1_000 : 0);
          return [posts, 'view_count', rowId, 'day', NOV(9), sum];
        }),
      ),
    );
  });

  it('never rolls up an hour of a day a rolling window still counts, nor of the day before', async () => {
    await suite.counter.dataSource.getRepository(CounterRollingWindow).insert([
      { entity: ranked, counter: 'view_count', window: '24h', from: String(NOV(9) + 7 * HOUR) },
      { entity: ranked, counter: 'view_count', window: '7d', from: String(NOV(9) + 5 * HOUR) },
      // A window no instance has moved for a day is dropped first, and holds nothing back then.
      { entity: ranked, counter: 'view_count', window: '48h', from: String(NOV(1)) },
    ]);
    await store([
      [ranked, 'view_count', '1', 'hour', NOV(7) + 12 * HOUR, 2],
      [ranked, 'view_count', '1', 'hour', NOV(8) + 12 * HOUR, 3],
      [ranked, 'view_count', '1', 'hour', NOV(9) + 4 * HOUR, 4],
      [ranked, 'view_count', '1', 'hour', NOV(9) + 6 * HOUR, 5],
      // Post keeps no rolling window: its hours of the same days go.
      [posts, 'view_count', '1', 'hour', NOV(9) + 6 * HOUR, 6],
    ]);

    expect(await upkeep.dropAbandoned(NOW_MS)).toBe(1);
    expect(await upkeep.prune(NOW_MS)).toBe(2);

    expect(await stored()).toEqual(
      sorted([
        [ranked, 'view_count', '1', 'day', NOV(7), 2],
        [ranked, 'view_count', '1', 'hour', NOV(8) + 12 * HOUR, 3],
        [ranked, 'view_count', '1', 'hour', NOV(9) + 4 * HOUR, 4],
        [ranked, 'view_count', '1', 'hour', NOV(9) + 6 * HOUR, 5],
        [posts, 'view_count', '1', 'day', NOV(9), 6],
      ]),
    );
  });

  it('answers count, series of days and top the same before and after a roll-up', async () => {
    await insideOneDay(60_000);
    /** Today, 00:00 UTC: the upkeep rolls up the days before d0 - 9 days (hours are kept 8 days). */
    const d0 = Math.floor(Date.now() / 1_000 / DAY) * DAY;
    const d = (days: number, hours = 0) => d0 + days * DAY + hours * HOUR;
    await suite.counter.dataSource.getRepository(Post).insert([1, 2].map((id) => ({ id })));
    await store([
      // Before the window: rolled up, never counted.
      [posts, 'view_count', '1', 'hour', d(-13, 4), 100],
      [posts, 'view_count', '1', 'hour', d(-12, 3), 5],
      [posts, 'view_count', '1', 'hour', d(-12, 20), -1],
      // A day rolled up in part already.
      [posts, 'view_count', '1', 'day', d(-11), 4],
      [posts, 'view_count', '1', 'hour', d(-11), 7],
      [posts, 'view_count', '1', 'hour', d(-10, 23), 2],
      // Kept in hours.
      [posts, 'view_count', '1', 'hour', d(-9, 1), 6],
      [posts, 'view_count', '1', 'hour', d(-8, 5), 1],
      [posts, 'view_count', '1', 'hour', d(-3, 2), 3],
      [posts, 'view_count', '2', 'hour', d(-12, 1), 10],
      [posts, 'view_count', '2', 'hour', d(-9, 1), -3],
    ]);
    // And a change waiting in Redis.
    await suite.counter.counters.increment(Post, 1, 'view_count', 2);
    const since = d(-12) * 1_000;
    const answers = async () => ({
      count: await suite.counter.counters.count(Post, 1, 'view_count', { since }),
      days: (await suite.counter.counters.series(Post, 1, 'view_count', { since, granularity: 'day' })).map(
        (bucket) => bucket.value,
      ),
      top: await suite.counter.counters.top(Post, 'view_count', { since, limit: 10 }),
    });
    const expected = {
      count: 29,
      days: [4, 11, 2, 6, 1, 0, 0, 0, 0, 3, 0, 0, 2],
      top: [
        { id: 1, value: 29 },
        { id: 2, value: 7 },
      ],
    };
    expect(await answers()).toEqual(expected);

    expect(await upkeep.prune(Date.now())).toBe(6);

    expect((await stored()).filter((row) => row[1] === 'view_count')).toEqual(
      sorted([
        [posts, 'view_count', '1', 'day', d(-13), 100],
        [posts, 'view_count', '1', 'day', d(-12), 4],
        [posts, 'view_count', '1', 'day', d(-11), 11],
        [posts, 'view_count', '1', 'day', d(-10), 2],
        [posts, 'view_count', '1', 'hour', d(-9, 1), 6],
        [posts, 'view_count', '1', 'hour', d(-8, 5), 1],
        [posts, 'view_count', '1', 'hour', d(-3, 2), 3],
        [posts, 'view_count', '2', 'day', d(-12), 10],
        [posts, 'view_count', '2', 'hour', d(-9, 1), -3],
      ]),
    );
    expect(await answers()).toEqual(expected);
    // Flushed, the change waiting is an hour row of today's: the same answers again.
    expect((await suite.counter.counters.flush()).error).toBeUndefined();
    expect(await answers()).toEqual(expected);
  });
});
