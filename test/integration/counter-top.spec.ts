import { describe, expect, it } from 'vitest';
import { CounterBucket, CounterRollingSum, CounterRollingWindow, InvalidCounterOptionError } from '../../lib/index.js';
import { RankedPost, RankedTopic, ROLLING_ENTITIES } from '../fixtures/rolling-entities.js';
import { claimShardOf } from '../support/batch-in-flight.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { awayFromHourEdge, clearWindowTables, DAY, HOUR, storedStarts } from '../support/rolling-tables.js';
import { TARGETS } from '../support/topologies.js';
import { startCounterApp } from '../support/counter-app.js';
import { REDIS_URL } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';

const HOUR_MS = HOUR * 1_000;
const DAY_MS = DAY * 1_000;

/** The changes of a test: post id → net change of view_count (an id without changes is left out). */
const CHANGES: Record<number, number[]> = {
  1: [5],
  2: [4, 5],
  3: [5],
  5: [2, -5],
  6: [12],
  7: [9],
  8: [1],
  9: [6, -1],
  10: [2],
  11: [7],
  12: [9],
  13: [3, -3],
};
/** Their ranking, by hand: highest first, ties by id as numbers (2, 7, 12; not '12', '2', '7'). */
const RANKING = [
  { id: 6, value: 12 },
  { id: 2, value: 9 },
  { id: 7, value: 9 },
  { id: 12, value: 9 },
  { id: 11, value: 7 },
  { id: 1, value: 5 },
  { id: 3, value: 5 },
  { id: 9, value: 5 },
  { id: 10, value: 2 },
  { id: 8, value: 1 },
];

// `top` ranks rows by a windowed counter's net change over a window, live: the database's values (the
// sums the flush keeps over a declared rolling window, buckets added up over any other, the two alike)
// plus the changes waiting in Redis, each counted once, before its flush and after it.
describe.each(TARGETS)('top on %s, %s', (database, topology) => {
  const suite = useCounterSuite(
    { database, topology },
    'top',
    { bucketRetentionMs: { hour: 8 * DAY_MS } },
    1,
    ROLLING_ENTITIES,
  );
  const counters = () => suite.counter.counters;
  const flush = async () => expect((await counters().flush()).error).toBeUndefined();
  let nextBase = 0;
  /** Inserts posts 1-13 (offset by a base of the test's own) and makes CHANGES; returns the base. */
  const changePosts = async () => {
    const base = nextBase;
    nextBase += 100;
    const repository = suite.counter.dataSource.getRepository(RankedPost);
    await repository.insert(Array.from({ length: 13 }, (_, n) => ({ id: base + n + 1 })));
    for (const [id, deltas] of Object.entries(CHANGES)) {
      for (const delta of deltas) await counters().change(RankedPost, base + Number(id), 'view_count', delta);
    }
    return base;
  };
  const ranked = (base: number, limit = RANKING.length) =>
    RANKING.slice(0, limit).map(({ id, value }) => ({ id: base + id, value }));
  const clearRolling = () => clearWindowTables(suite.counter.dataSource);

  it('ranks the rows with the most changes live: the same before a flush and after it', async () => {
    await awayFromHourEdge();
    await clearRolling();
    const base = await changePosts();
    const since = Date.now() - 24 * HOUR_MS;
    // Not flushed yet: every change waits in Redis (and no rolling window exists: buckets answer).
    expect(await counters().top(RankedPost, 'view_count', { since, limit: 100 })).toEqual(ranked(base));
    expect(await counters().top(RankedPost, 'view_count', { since, limit: 4 })).toEqual(ranked(base, 4));
    await flush();

    expect(await counters().top(RankedPost, 'view_count', { since, limit: 100 })).toEqual(ranked(base));
    expect(await counters().top(RankedPost, 'view_count', { since, limit: 4 })).toEqual(ranked(base, 4));
    expect(await counters().top(RankedPost, 'view_count', { since: Date.now() - 7 * DAY_MS, limit: 1 })).toEqual(
      ranked(base, 1),
    );
    // The sums answered: the flush made the windows.
    expect(Object.keys(await storedStarts(suite.counter.dataSource)).sort()).toEqual([
      'like_count 2d',
      'view_count 24h',
      'view_count 7d',
    ]);
    // A change after the flush counts at once, and once more after its own flush.
    await counters().increment(RankedPost, base + 8, 'view_count', 100);
    expect((await counters().top(RankedPost, 'view_count', { since, limit: 1 }))[0]).toEqual({
      id: base + 8,
      value: 101,
    });
    await flush();
    expect((await counters().top(RankedPost, 'view_count', { since, limit: 1 }))[0]).toEqual({
      id: base + 8,
      value: 101,
    });
  });

  it('lets waiting changes move rows into the top and out of it, over rolling sums and buckets alike', async () => {
    await awayFromHourEdge();
    await clearRolling();
    const base = await changePosts();
    await flush();
    const rolling = () => counters().top(RankedPost, 'view_count', { since: Date.now() - 24 * HOUR_MS, limit: 3 });
    const summed = () =>
      counters().top(RankedPost, 'view_count', { since: Date.now() - 24 * HOUR_MS, until: Date.now(), limit: 3 });
    const both = async () => {
      const fromSums = await rolling();
      expect(await summed()).toEqual(fromSums);
      return fromSums;
    };
    expect(await both()).toEqual(ranked(base, 3));
    // Post 10 (2, far from the top) gets 8 more: 10 ranks second.
    await counters().increment(RankedPost, base + 10, 'view_count', 8);
    const entered = [
      { id: base + 6, value: 12 },
      { id: base + 10, value: 10 },
      { id: base + 2, value: 9 },
    ];
    expect(await both()).toEqual(entered);
    // Post 6 (12, first) loses 20: it leaves, and the next by its flushed value, 7 (9), comes in.
    await counters().decrement(RankedPost, base + 6, 'view_count', 20);
    const pushedOut = [
      { id: base + 10, value: 10 },
      { id: base + 2, value: 9 },
      { id: base + 7, value: 9 },
    ];
    expect(await both()).toEqual(pushedOut);
    await flush();
    expect(await both()).toEqual(pushedOut);
  });

  it('counts a batch in flight once, whether the database has it yet or not', async () => {
    await awayFromHourEdge();
    await clearRolling();
    const base = await changePosts();
    await flush();
    const id = base + 8;
    await counters().increment(RankedPost, id, 'view_count', 20);
    const inFlight = await claimShardOf(suite.counter.app, RankedPost, id, `top-${id}`);
    const expected = [
      { id, value: 22 },
      { id: base + 6, value: 12 },
    ];
    const top = async () => {
      const since = Date.now() - 24 * HOUR_MS;
      const fromSums = await counters().top(RankedPost, 'view_count', { since, limit: 2 });
      expect(await counters().top(RankedPost, 'view_count', { since, until: Date.now(), limit: 2 })).toEqual(fromSums);
      return fromSums;
    };
    // Claimed, not written: in Redis's batch only; and one more change pending.
    await counters().increment(RankedPost, id, 'view_count', 1);
    expect(await top()).toEqual(expected);
    // Written, not acknowledged: in the database and still in Redis's batch.
    expect(await inFlight.write()).toMatchObject({ applied: true });
    expect(await top()).toEqual(expected);
    expect(await inFlight.ack()).toBe(true);
    expect(await top()).toEqual(expected);
    await flush();
    expect(await top()).toEqual(expected);
  });

  it('ranks alike from the rolling sums and from the buckets over the same window', async () => {
    await awayFromHourEdge();
    await clearRolling();
    const base = await changePosts();
    await counters().increment(RankedPost, base + 3, 'like_count', 4);
    await counters().increment(RankedPost, base + 1, 'like_count', 4);
    await flush();
    const now = Date.now();
    for (const [counter, since] of [
      ['view_count', now - 24 * HOUR_MS],
      ['view_count', now - 7 * DAY_MS],
      ['like_count', now - 2 * DAY_MS],
    ] as const) {
      const rolling = await counters().top(RankedPost, counter, { since, limit: 100 });
      // An `until` makes it add up buckets, the same ones.
      const summed = await counters().top(RankedPost, counter, { since, until: Date.now(), limit: 100 });
      expect(summed).toEqual(rolling);
    }
    expect(await counters().top(RankedPost, 'like_count', { since: now - 2 * DAY_MS, limit: 100 })).toEqual([
      { id: base + 1, value: 4 },
      { id: base + 3, value: 4 },
    ]);
    // A window no rolling window matches adds up buckets: 36 hours, in hours and days.
    expect(await counters().top(RankedPost, 'view_count', { since: now - 36 * HOUR_MS, limit: 3 })).toEqual(
      ranked(base, 3),
    );
  });

  it('moves a rolling window that lags before it reads it', async () => {
    await awayFromHourEdge();
    await clearRolling();
    const base = await changePosts();
    await flush();
    const dataSource = suite.counter.dataSource;
    const table = dataSource.getMetadata(RankedPost).tablePath;
    const starts = await storedStarts(dataSource);
    // As if no instance had moved it for two hours: it starts two hours earlier, and counts an old
    // bucket of post 1 there (kept whole by the invariant: the sum has it too).
    const lagging = starts['view_count 24h'] - 2 * HOUR;
    await dataSource.getRepository(CounterRollingWindow).update({ window: '24h' }, { from: String(lagging) });
    await dataSource.getRepository(CounterBucket).insert({
      entity: table,
      counter: 'view_count',
      rowId: String(base + 1),
      granularity: 'hour',
      start: String(lagging),
      value: '50',
    });
    await dataSource
      .getRepository(CounterRollingSum)
      .update({ window: '24h', rowId: String(base + 1) }, { value: '55' });

    expect(await counters().top(RankedPost, 'view_count', { since: Date.now() - 24 * HOUR_MS, limit: 100 })).toEqual(
      ranked(base),
    );
    expect((await storedStarts(dataSource))['view_count 24h']).toBe(starts['view_count 24h']);
  });

  it.runIf(topology === 'standalone')('answers as of the last flush while Redis is unreachable', async () => {
    await awayFromHourEdge();
    await clearRolling();
    const base = await changePosts();
    await flush();
    await counters().increment(RankedPost, base + 8, 'view_count', 100);
    const redisUrl = new URL(REDIS_URL);
    const proxy = await TcpProxy.start({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) });
    const other = await startCounterApp({
      database: suite.database.options,
      keyPrefix: suite.prefix,
      synchronize: false,
      entities: ROLLING_ENTITIES,
      counter: { redis: proxy.url, bucketRetentionMs: { hour: 8 * DAY_MS }, flushOnShutdown: false },
    });
    try {
      const since = Date.now() - 24 * HOUR_MS;
      const live = [{ id: base + 8, value: 101 }, ...ranked(base, 2)];
      expect(await other.counters.top(RankedPost, 'view_count', { since, limit: 3 })).toEqual(live);
      proxy.setMode('reset');
      expect(await other.counters.top(RankedPost, 'view_count', { since, limit: 3 })).toEqual(ranked(base, 3));
      expect(await other.counters.top(RankedPost, 'view_count', { since, until: Date.now(), limit: 3 })).toEqual(
        ranked(base, 3),
      );
      expect(await counters().top(RankedPost, 'view_count', { since, limit: 3 })).toEqual(live);
    } finally {
      await other.close();
      await proxy.close();
    }
    await flush();
  });

  it('gives string ids as text, and integer ids as numbers', async () => {
    const ids = ['b:{1}', 'a', 'café'];
    await suite.counter.dataSource.getRepository(RankedTopic).insert(ids.map((id) => ({ id })));
    await counters().increment(RankedTopic, 'b:{1}', 'view_count', 2);
    await counters().increment(RankedTopic, 'a', 'view_count', 2);
    await counters().increment(RankedTopic, 'café', 'view_count', 3);
    await flush();
    expect(await counters().top(RankedTopic, 'view_count', { since: Date.now() - 3 * HOUR_MS, limit: 10 })).toEqual([
      { id: 'café', value: 3 },
      { id: 'a', value: 2 },
      { id: 'b:{1}', value: 2 },
    ]);
  });

  it('refuses a limit that is not a whole number from 1 to 1000, and a counter without windows', async () => {
    const since = Date.now() - HOUR_MS;
    const refused = async (run: () => Promise<unknown>) => {
      const error = await run().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      return error instanceof InvalidCounterOptionError ? error.option : error;
    };
    for (const limit of [0, -1, 1.5, 1_001, Number.NaN, '5' as unknown as number]) {
      expect(await refused(() => counters().top(RankedPost, 'view_count', { since, limit }))).toBe('limit');
    }
    expect(await refused(() => counters().top(RankedPost, 'share_count', { since, limit: 1 }))).toBe('windows');
    expect(await counters().top(RankedPost, 'view_count', { since, limit: 1_000 })).toBeInstanceOf(Array);
  });
});
