import { describe, expect, it } from 'vitest';
import {
  CounterBucket,
  CounterWindowBeyondRetentionError,
  InvalidCounterOptionError,
  type CounterBucketValue,
} from '../../lib/index.js';
import { Post, Channel, WINDOWED_ENTITIES } from '../fixtures/windowed-entities.js';
import { claimShardOf } from '../support/batch-in-flight.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { TARGETS } from '../support/topologies.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

const sum = (series: CounterBucketValue[]) => series.reduce((total, bucket) => total + bucket.value, 0);

// G11: `count` and `series` are live (the buckets the database has plus the changes Redis holds), the
// same before a flush and after it, and never count a batch in flight twice, on every database and
// topology. Redis's own clock picks the buckets here (bucket-changes.spec.ts fixes it).
describe.each(TARGETS)('counts over time on %s, %s', (database, topology) => {
  const suite = useCounterSuite({ database, topology }, 'windows', { shards: 4 }, 1, WINDOWED_ENTITIES);
  const counters = () => suite.counter.counters;
  let nextId = 1;
  const newPost = async () => {
    const id = nextId++;
    await suite.counter.dataSource.getRepository(Post).insert({ id, viewCount: 0, likeCount: 0, shareCount: 0 });
    return id;
  };
  /** The last two days, in hours: every change of a test falls in it. */
  const lastHours = () => ({ since: Date.now() - 2 * DAY_MS, granularity: 'hour' as const });
  /** The database's buckets of a row, as `series` gives non-zero ones. */
  const storedBuckets = async (entity: string, id: string, granularity: string) => {
    const rows = await suite.counter.dataSource
      .getRepository(CounterBucket)
      .find({ where: { entity, rowId: id, counter: 'view_count', granularity }, order: { start: 'ASC' } });
    return rows.map((row) => ({ start: new Date(Number(row.start) * 1_000), value: Number(row.value) }));
  };
  const nonZero = (series: CounterBucketValue[]) => series.filter((bucket) => bucket.value !== 0);
  const flush = async () => expect((await counters().flush()).error).toBeUndefined();

  it('counts changes live, the same before the flush and after it, in buckets that add up to it', async () => {
    const id = await newPost();
    await counters().increment(Post, id, 'view_count', 5);
    await counters().decrement(Post, id, 'view_count', 2);
    await counters().change(Post, id, 'view_count', 4, { idempotencyKey: 'k-1' });
    await counters().change(Post, id, 'view_count', 4, { idempotencyKey: 'k-1' });
    await counters().increment(Post, id, 'share_count', 9);

    const window = { since: Date.now() - DAY_MS };
    const before = { count: await counters().count(Post, id, 'view_count', window) };
    const hours = await counters().series(Post, id, 'view_count', lastHours());
    const days = await counters().series(Post, id, 'view_count', { ...lastHours(), granularity: 'day' });
    expect(before.count).toBe(7);
    expect([sum(hours), sum(days)]).toEqual([7, 7]);
    expect(hours).toHaveLength(49);
    expect(days).toHaveLength(3);

    await flush();
    const table = suite.counter.dataSource.getMetadata(Post).tablePath;
    // The flush stores the hours only: the days are made of them.
    expect(await storedBuckets(table, String(id), 'hour')).toEqual(nonZero(hours));
    expect(await storedBuckets(table, String(id), 'day')).toEqual([]);
    expect(await counters().count(Post, id, 'view_count', window)).toBe(7);
    expect(await counters().series(Post, id, 'view_count', lastHours())).toEqual(hours);
    expect(await counters().series(Post, id, 'view_count', { ...lastHours(), granularity: 'day' })).toEqual(days);
    // More changes after the flush: the stored buckets plus the pending ones.
    await counters().increment(Post, id, 'view_count', 10);
    expect(await counters().count(Post, id, 'view_count', window)).toBe(17);
  });

  it('counts a batch in flight once, whether the database has it yet or not', async () => {
    const id = await newPost();
    await counters().increment(Post, id, 'view_count', 3);
    const inFlight = await claimShardOf(suite.counter.app, Post, id, `windows-${id}`);
    const window = { since: Date.now() - DAY_MS };
    // Claimed, not written: in Redis's batch only.
    await counters().increment(Post, id, 'view_count', 1);
    expect(await counters().count(Post, id, 'view_count', window)).toBe(4);
    // Written, not acknowledged: in the database and still in Redis's batch.
    expect(await inFlight.write()).toMatchObject({ applied: true });
    expect(await counters().count(Post, id, 'view_count', window)).toBe(4);
    expect(await inFlight.ack()).toBe(true);
    expect(await counters().count(Post, id, 'view_count', window)).toBe(4);
    await flush();
    expect(await counters().count(Post, id, 'view_count', window)).toBe(4);
  });

  it('keeps a day-only counter in days, and names string ids by their text', async () => {
    const id = await newPost();
    await counters().increment(Post, id, 'like_count', 6);
    await counters().decrement(Post, id, 'like_count', 1);
    const channel = 'news:{eu} 1';
    await suite.counter.dataSource.getRepository(Channel).insert({ id: channel, viewCount: 0 });
    await counters().increment(Channel, channel, 'view_count', 8);
    const since = Date.now() - DAY_MS;
    await flush();
    expect(await counters().count(Post, id, 'like_count', { since })).toBe(5);
    expect(await counters().count(Channel, channel, 'view_count', { since })).toBe(8);
    const stored = async (entity: typeof Post | typeof Channel, rowId: string) => {
      const table = suite.counter.dataSource.getMetadata(entity).tablePath;
      const rows = await suite.counter.dataSource.getRepository(CounterBucket).findBy({ entity: table, rowId });
      return rows.map((row) => [row.counter, row.granularity, Number(row.value)]).sort();
    };
    // Each counter's finest buckets only: days for like_count, hours for the channel's view_count.
    expect(await stored(Post, String(id))).toEqual([['like_count', 'day', 5]]);
    expect(await stored(Channel, channel)).toEqual([['view_count', 'hour', 8]]);
  });

  it('writes no bucket of a row deleted before the flush', async () => {
    const id = await newPost();
    await counters().increment(Post, id, 'view_count', 2);
    await suite.counter.dataSource.getRepository(Post).delete({ id });
    await flush();
    const table = suite.counter.dataSource.getMetadata(Post).tablePath;
    expect(await storedBuckets(table, String(id), 'hour')).toEqual([]);
    expect(await storedBuckets(table, String(id), 'day')).toEqual([]);
  });

  it('answers a window as long as the buckets are kept, wherever in a bucket it starts', async () => {
    const id = await newPost();
    await counters().increment(Post, id, 'view_count', 3);
    await counters().increment(Post, id, 'like_count', 2);
    // The defaults keep hours 7 days and days 400: "this week" and "this year" start mid-hour, mid-day.
    expect(await counters().count(Post, id, 'view_count', { since: Date.now() - 7 * DAY_MS })).toBe(3);
    expect(await counters().count(Post, id, 'like_count', { since: Date.now() - 400 * DAY_MS })).toBe(2);
    const week = await counters().series(Post, id, 'view_count', {
      since: Date.now() - 7 * DAY_MS,
      granularity: 'hour',
    });
    expect([week.length, sum(week)]).toEqual([7 * 24 + 1, 3]);
  });

  it('refuses windows it cannot answer, naming the option', async () => {
    const id = await newPost();
    // Eight days ago at 01:30 UTC: its first hours are older than the hours kept, and no day starts there.
    const midnight = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const refusal = async (run: () => Promise<unknown>) => {
      const error = await run().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      return error instanceof InvalidCounterOptionError || error instanceof CounterWindowBeyondRetentionError
        ? [error.constructor.name, error.option]
        : error;
    };
    expect(await refusal(() => counters().count(Post, id, 'share_count', { since: 0 }))).toEqual([
      'InvalidCounterOptionError',
      'windows',
    ]);
    expect(
      await refusal(() => counters().series(Post, id, 'like_count', { since: Date.now(), granularity: 'hour' })),
    ).toEqual(['InvalidCounterOptionError', 'granularity']);
    expect(
      await refusal(() => counters().count(Post, id, 'view_count', { since: midnight - 8 * DAY_MS + 90 * 60_000 })),
    ).toEqual(['CounterWindowBeyondRetentionError', 'bucketRetentionMs.hour']);
    expect(await refusal(() => counters().count(Post, id, 'like_count', { since: Date.now() - 401 * DAY_MS }))).toEqual(
      ['CounterWindowBeyondRetentionError', 'bucketRetentionMs.day'],
    );
  });
});
