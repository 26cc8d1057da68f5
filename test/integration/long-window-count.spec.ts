import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterBucket } from '../../lib/index.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { FixedClockRedis } from '../../support/clock/fixed-clock-redis.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';
import { Post, WINDOWED_ENTITIES } from '../fixtures/windowed-entities.js';
import { insideOneDay } from '../support/one-hour.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { DAY, HOUR } from '../support/rolling-tables.js';

/** One shard: every row's changes wait in one pending hash, as many as a busy shard's. */
const SHARDS = 1;
/** Days in the windows: the read of Redis covers 7,200 hours and those of today. */
const WINDOW_DAYS = 300;
/** Other rows that wait with a change each: their fields outnumber the window's hours. */
const OTHER_ROWS = 3_700;

// G11 over a long window of a counter of hours and days: `count` adds the day rows of its whole days,
// the hour rows of its whole span (those not rolled up yet) and the changes of its hours that wait in
// Redis, whichever way the read of Redis goes (through the row's fields, or through the window's hours
// when the shard holds more fields than the window has hours), and nothing from before the window.
describe.each(DATABASES)('a live count over a long window on %s', (database) => {
  let clock: FixedClockRedis;
  let redis: Redis;
  let testDatabase: TestDatabase;
  let app: CounterApp;
  const prefix = uniquePrefix('long-window');
  const keys = new CounterKeys(prefix, SHARDS);
  /** Today, 00:00 UTC, in Unix seconds, and a time `days` and `hours` from it. */
  let d0: number;
  const d = (days: number, hours = 0) => d0 + days * DAY + hours * HOUR;
  const since = () => d(-WINDOW_DAYS) * 1_000;

  /** Changes `id`'s view_count by `delta` at `seconds` by Redis's clock (now, without). */
  const changeAt = async (id: number, delta: number, seconds?: number) => {
    if (seconds === undefined) clock.realTime();
    else clock.setTime(seconds * 1_000 + 30_000);
    await app.counters.increment(Post, id, 'view_count', delta);
    clock.realTime();
  };
  const store = (rows: Array<[id: number, granularity: 'hour' | 'day', start: number, value: number]>) =>
    app.dataSource.getRepository(CounterBucket).insert(
      rows.map(([id, granularity, start, value]) => ({
        entity: app.dataSource.getMetadata(Post).tablePath,
        counter: 'view_count',
        rowId: String(id),
        granularity,
        start: String(start),
        value: String(value),
      })),
    );
  /** The non-zero days of the window, as [days from today, value]. */
  const nonZeroDays = async (id: number) =>
    (await app.counters.series(Post, id, 'view_count', { since: since(), granularity: 'day' }))
      .filter((bucket) => bucket.value !== 0)
      .map((bucket) => [(bucket.start.getTime() / 1_000 - d0) / DAY, bucket.value]);

  beforeAll(async () => {
    clock = await FixedClockRedis.start();
    redis = new Redis(clock.url, RESP2);
    testDatabase = await createTestDatabase(database);
    app = await startCounterApp({
      database: testDatabase.options,
      keyPrefix: prefix,
      entities: WINDOWED_ENTITIES,
      counter: { redis: clock.url, shards: SHARDS },
    });
  });
  afterAll(async () => {
    await app?.close();
    await testDatabase?.drop();
    redis?.disconnect();
    await clock?.stop();
  });

  it('adds the day rows, the hour rows and the few hours waiting in Redis', async () => {
    await insideOneDay(60_000);
    d0 = Math.floor(Date.now() / 1_000 / DAY) * DAY;
    await app.dataSource.getRepository(Post).insert({ id: 1 });
    await store([
      // Before the window: never counted.
      [1, 'day', d(-WINDOW_DAYS - 1), 1_000],
      [1, 'hour', d(-WINDOW_DAYS, -1), 500],
      // Days rolled up, one of them in part.
      [1, 'day', d(-WINDOW_DAYS), 5],
      [1, 'day', d(-200), -2],
      [1, 'hour', d(-200, 4), 3],
      [1, 'day', d(-10), 7],
      // Hours not rolled up yet.
      [1, 'hour', d(-2, 1), 4],
      [1, 'hour', d(0), 2],
    ]);
    await changeAt(1, 50, d(-WINDOW_DAYS - 1, 1));
    await changeAt(1, 6, d(-WINDOW_DAYS));
    await changeAt(1, 1, d(-150, 7));
    await changeAt(1, -2, d(0, -1));
    await changeAt(1, 3);
    const days = [
      [-WINDOW_DAYS, 11],
      [-200, 1],
      [-150, 1],
      [-10, 7],
      [-2, 4],
      [-1, -2],
      [0, 5],
    ];

    expect(await app.counters.count(Post, 1, 'view_count', { since: since() })).toBe(27);
    expect(await nonZeroDays(1)).toEqual(days);

    // The first flush writes the waiting hours and rolls those older than eight days up (the hours are
    // kept seven): the same answers, from rows alone.
    expect((await app.counters.flush()).error).toBeUndefined();
    const rows = await app.dataSource.getRepository(CounterBucket).findBy({ rowId: '1', counter: 'view_count' });
    const byStart = (granularity: string) =>
      rows
        .filter((row) => row.granularity === granularity)
        .map((row) => [(Number(row.start) - d0) / HOUR, Number(row.value)])
        .sort((a, b) => a[0] - b[0]);
    expect(byStart('day')).toEqual(
      [
        [-WINDOW_DAYS - 1, 1_550],
        [-WINDOW_DAYS, 11],
        [-200, 1],
        [-150, 1],
        [-10, 7],
      ].map(([days, value]) => [days * 24, value]),
    );
    const thisHour = (Math.floor(Date.now() / 1_000 / HOUR) * HOUR - d0) / HOUR;
    const hours = new Map([
      [-48 + 1, 4],
      [-1, -2],
      [0, 2],
    ]);
    hours.set(thisHour, (hours.get(thisHour) ?? 0) + 3);
    expect(byStart('hour')).toEqual([...hours].sort((a, b) => a[0] - b[0]));
    expect(await app.counters.count(Post, 1, 'view_count', { since: since() })).toBe(27);
    expect(await nonZeroDays(1)).toEqual(days);
  });

  it("reads the window's hours one by one when the shard waits with more fields than it has hours", async () => {
    await insideOneDay(60_000);
    d0 = Math.floor(Date.now() / 1_000 / DAY) * DAY;
    const others = Array.from({ length: OTHER_ROWS }, (_, index) => 1_001 + index);
    const posts = app.dataSource.getRepository(Post);
    await posts.insert({ id: 2 });
    for (let at = 0; at < others.length; at += 500) {
      await posts.insert(others.slice(at, at + 500).map((id) => ({ id })));
    }
    for (let at = 0; at < others.length; at += 250) {
      await Promise.all(others.slice(at, at + 250).map((id) => app.counters.increment(Post, id, 'view_count')));
    }
    await store([[2, 'day', d(-WINDOW_DAYS), 5]]);
    // The window's first hour, the hours either side of the end of the first 2,000, a later one, its
    // last hour before today, and one before it.
    const first = d(-WINDOW_DAYS);
    await changeAt(2, 1, first);
    await changeAt(2, 2, first + 1_999 * HOUR);
    await changeAt(2, 4, first + 2_000 * HOUR);
    await changeAt(2, 8, first + 4_001 * HOUR);
    await changeAt(2, 16, d(0, -1));
    await changeAt(2, 100, first - HOUR);
    await changeAt(2, 32);
    const pending = keys.shard(app.dataSource.getMetadata(Post).tablePath, 0).pending;
    // More fields than the 7,200 hours of the whole days and the 24 at most of today.
    expect(await redis.hlen(pending)).toBeGreaterThan(WINDOW_DAYS * 24 + 24);

    expect(await app.counters.count(Post, 2, 'view_count', { since: since() })).toBe(5 + 1 + 2 + 4 + 8 + 16 + 32);
    expect(await app.counters.count(Post, 1_001, 'view_count', { since: since() })).toBe(1);
  });
});
