import { beforeEach, describe, expect, it } from 'vitest';
import { CounterBucket, CounterRollingSum, CounterRollingWindow } from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import type { CountedEntity, CounterField } from '../../lib/model/counted-entity.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { RollingUpkeep } from '../../lib/windows/rolling.upkeep.js';
import { DATABASES } from '../../support/databases.js';
import { RankedPost, ROLLING_ENTITIES } from '../fixtures/rolling-entities.js';
import { useCounterSuite } from '../support/counter-suite.js';
import {
  awayFromHourEdge,
  bucketBatch,
  clearWindowTables,
  DAY,
  HOUR,
  storedStarts,
  storedSums,
  type Place,
} from '../support/rolling-tables.js';

// The flush keeps, per row and rolling window, the sum of the row's buckets (of the counter's finest
// granularity) from the window's start on, in the transaction that writes the buckets; the upkeep moves
// the start on and takes out exactly the buckets it leaves behind.
describe.each(DATABASES)('rolling sums on %s', (database) => {
  // Hours kept eight days: the 7-day window of hours needs them (and two more hours).
  const suite = useCounterSuite(
    database,
    'rolling',
    { bucketRetentionMs: { hour: 8 * DAY * 1_000 } },
    1,
    ROLLING_ENTITIES,
  );
  let db: CounterDatabase;
  let upkeep: RollingUpkeep;
  let posts: CountedEntity;
  let views: CounterField;
  let likes: CounterField;
  /** The start of the current hour and day, in Unix seconds. */
  let h0: number;
  let d0: number;
  const dataSource = () => suite.counter.dataSource;

  beforeEach(async () => {
    db = suite.counter.app.get(CounterDatabase);
    upkeep = suite.counter.app.get(RollingUpkeep);
    posts = suite.counter.app.get(CounterRegistry).get(RankedPost);
    [views, likes] = posts.counters;
    await clearWindowTables(dataSource());
    await dataSource().getRepository(RankedPost).clear();
    await dataSource()
      .getRepository(RankedPost)
      .insert([1, 2, 3, 4].map((id) => ({ id })));
    await awayFromHourEdge();
    h0 = Math.floor(Date.now() / 1_000 / HOUR) * HOUR;
    d0 = Math.floor(Date.now() / 1_000 / DAY) * DAY;
  });

  /** Stores buckets of view_count as a flush before rolling windows were declared would have: no window, no sum. */
  const storeBuckets = (places: Place[]) =>
    dataSource()
      .getRepository(CounterBucket)
      .insert(
        places.map(([id, granularity, start, value]) => ({
          entity: posts.key,
          counter: 'view_count',
          rowId: String(id),
          granularity,
          start: String(start),
          value: String(value),
        })),
      );

  it('creates the windows in the first flush, their sums counting the buckets stored before', async () => {
    const start24h = h0 - 24 * HOUR;
    const start7d = h0 - 7 * 24 * HOUR;
    await storeBuckets([
      [1, 'hour', start7d - HOUR, 100],
      [1, 'hour', start7d, 10],
      [1, 'hour', start24h - HOUR, 20],
      [1, 'hour', start24h, 3],
      [2, 'hour', h0 - HOUR, 4],
      [2, 'day', d0, 4],
    ]);
    const batch = bucketBatch(posts, views, [
      [1, 'hour', h0, 5],
      [1, 'day', d0, 5],
      [3, 'hour', start24h - HOUR, 7],
    ]);
    expect(await db.applyBatches([batch])).toEqual({ applied: true, missingIds: [[]] });

    expect(await storedStarts(dataSource())).toEqual({
      'view_count 24h': start24h,
      'view_count 7d': start7d,
      'like_count 2d': d0 - 2 * DAY,
    });
    expect(await storedSums(dataSource())).toEqual({
      'view_count 24h 1': 8,
      'view_count 24h 2': 4,
      'view_count 7d 1': 38,
      'view_count 7d 2': 4,
      'view_count 7d 3': 7,
    });
  });

  it('adds to the sums the buckets of the finest granularity from each window’s start on', async () => {
    await db.applyBatches([bucketBatch(posts, views, [[1, 'hour', h0, 1]])]);
    const start24h = h0 - 24 * HOUR;
    const batches = [
      bucketBatch(posts, views, [
        [1, 'hour', start24h - HOUR, 50],
        [1, 'hour', start24h, 2],
        [1, 'day', d0, 52],
        [2, 'hour', h0, -3],
      ]),
      bucketBatch(
        posts,
        likes,
        [
          [3, 'day', d0 - 3 * DAY, 9],
          [3, 'day', d0 - DAY, 4],
          [4, 'day', d0, 6],
        ],
        1,
      ),
    ];
    expect(await db.applyBatches(batches)).toEqual({ applied: true, missingIds: [[], []] });

    expect(await storedSums(dataSource())).toEqual({
      'view_count 24h 1': 3,
      'view_count 24h 2': -3,
      'view_count 7d 1': 53,
      'view_count 7d 2': -3,
      'like_count 2d 3': 4,
      'like_count 2d 4': 6,
    });
  });

  it('moves a window on, taking out exactly the buckets it leaves behind', async () => {
    await db.applyBatches([bucketBatch(posts, views, [[1, 'hour', h0, 1]])]);
    const start = h0 - 24 * HOUR;
    const hour = (n: number) => start + n * HOUR;
    await db.applyBatches([
      bucketBatch(posts, views, [
        [1, 'hour', hour(0), 4],
        [1, 'hour', hour(1), 2],
        [2, 'hour', hour(0), 3],
        [2, 'hour', hour(1), 5],
        [2, 'hour', hour(2), -5],
        [3, 'hour', hour(1), 6],
      ]),
    ]);
    expect(await storedSums(dataSource())).toMatchObject({
      'view_count 24h 1': 7,
      'view_count 24h 2': 3,
      'view_count 24h 3': 6,
    });
    const nowMs = Date.now();
    const sums24h = async () =>
      Object.fromEntries(Object.entries(await storedSums(dataSource())).filter(([key]) => key.includes(' 24h ')));

    // Nothing to move at the hour the windows were made in.
    expect(await upkeep.advance(nowMs)).toBe(0);

    // An hour on (the 24-hour and 7-day windows move): hour(0) leaves the 24-hour window; row 2's sum
    // is then 0, and its row goes.
    expect(await upkeep.advance(nowMs + 3_600_000)).toBe(2);
    expect((await storedStarts(dataSource()))['view_count 24h']).toBe(hour(1));
    expect(await sums24h()).toEqual({
      'view_count 24h 1': 3,
      'view_count 24h 3': 6,
    });

    // Two hours on: hour(1) leaves too; row 2's sum, gone, becomes -5.
    expect(await upkeep.advance(nowMs + 2 * 3_600_000)).toBe(2);
    expect(await sums24h()).toEqual({
      'view_count 24h 1': 1,
      'view_count 24h 2': -5,
    });
    // The 7-day window still counts every bucket.
    expect((await storedStarts(dataSource()))['view_count 7d']).toBe(h0 - (7 * 24 - 2) * HOUR);
    expect((await storedSums(dataSource()))['view_count 7d 1']).toBe(7);

    // A day on: the 2-day window of days moves too (it had no bucket); of the 24-hour window's buckets,
    // only the current hour's is left.
    expect(await upkeep.advance(nowMs + 24 * 3_600_000)).toBe(3);
    expect(await storedStarts(dataSource())).toEqual({
      'view_count 24h': h0,
      'view_count 7d': h0 - 6 * 24 * HOUR,
      'like_count 2d': d0 - DAY,
    });
    expect(await sums24h()).toEqual({ 'view_count 24h 1': 1 });
  });

  it('adds a batch written twice once, and nothing of a row that is gone', async () => {
    const batch = bucketBatch(posts, views, [
      [1, 'hour', h0, 2],
      [2, 'hour', h0, 3],
    ]);
    await dataSource().getRepository(RankedPost).delete({ id: 2 });
    expect(await db.applyBatches([batch])).toEqual({ applied: true, missingIds: [[2]] });
    expect(await db.applyBatches([batch])).toEqual({ applied: false });
    expect(await storedSums(dataSource())).toEqual({ 'view_count 24h 1': 2, 'view_count 7d 1': 2 });
  });

  it('never moves a window back', async () => {
    await db.applyBatches([bucketBatch(posts, views, [[1, 'hour', h0, 1]])]);
    const before = await storedStarts(dataSource());
    expect(await upkeep.advance(Date.now() - 5 * 3_600_000)).toBe(0);
    expect(await storedStarts(dataSource())).toEqual(before);
  });

  it('counts every batch once when flush transactions race to create a window', async () => {
    const start24h = h0 - 24 * HOUR;
    for (let round = 0; round < 5; round++) {
      await clearWindowTables(dataSource());
      await storeBuckets([
        [1, 'hour', start24h, 10],
        [2, 'hour', h0 - HOUR, 20],
      ]);
      // Ten transactions at once, each with a batch of its own (its own shard), all of a window not made yet.
      const batches = Array.from({ length: 10 }, (_, n) =>
        bucketBatch(
          posts,
          views,
          [
            [1 + (n % 4), 'hour', h0, n + 1],
            [1 + ((n + 1) % 4), 'hour', start24h - HOUR, 100],
          ],
          n,
        ),
      );
      const outcomes = await Promise.all(batches.map((batch) => db.applyBatches([batch])));
      expect(outcomes.every((outcome) => outcome.applied)).toBe(true);
      // Row r gets n + 1 in the current hour for n ≡ r - 1 (mod 4), and 100 an hour before the 24-hour
      // window (the 7-day window's) for n ≡ r - 2: (1+5+9, 200), (2+6+10, 300), (3+7, 300), (4+8, 200).
      expect(await storedSums(dataSource())).toEqual({
        'view_count 24h 1': 25,
        'view_count 24h 2': 38,
        'view_count 24h 3': 10,
        'view_count 24h 4': 12,
        'view_count 7d 1': 225,
        'view_count 7d 2': 338,
        'view_count 7d 3': 310,
        'view_count 7d 4': 212,
      });
      expect(await dataSource().getRepository(CounterRollingWindow).count()).toBe(3);
    }
  });

  it('starts a window anew, its sums read again, when its row was deleted', async () => {
    await db.applyBatches([bucketBatch(posts, views, [[1, 'hour', h0, 4]])]);
    await dataSource().getRepository(CounterRollingWindow).delete({ window: '24h' });
    await dataSource().getRepository(CounterRollingSum).update({ window: '24h' }, { value: '1000' });
    await db.applyBatches([bucketBatch(posts, views, [[2, 'hour', h0, 3]])]);
    expect(await storedSums(dataSource())).toEqual({
      'view_count 24h 1': 4,
      'view_count 24h 2': 3,
      'view_count 7d 1': 4,
      'view_count 7d 2': 3,
    });
  });

  // A deployment being rolled out runs instances that declare a window beside instances that do not yet
  // (or no longer) do: every instance keeps the sums of every stored window, or the window misses the
  // changes the others flush, and loses them for good.
  describe('windows this instance does not declare', () => {
    /** Stores a window of view_count this app does not declare, starting at `from`, with `sums` by row. */
    const storeWindow = async (window: string, from: number, sums: Record<number, number> = {}) => {
      const key = { entity: posts.key, counter: 'view_count', window };
      await dataSource()
        .getRepository(CounterRollingWindow)
        .insert({ ...key, from: String(from) });
      for (const [rowId, value] of Object.entries(sums))
        await dataSource()
          .getRepository(CounterRollingSum)
          .insert({ ...key, rowId, value: String(value) });
    };

    it('adds to them the buckets a flush writes from their start on', async () => {
      await storeWindow('3d', h0 - 3 * DAY, { 1: 10 });
      await db.applyBatches([
        bucketBatch(posts, views, [
          [1, 'hour', h0, 5],
          [2, 'hour', h0 - 3 * DAY - HOUR, 7],
          [2, 'day', d0, 7],
        ]),
      ]);
      const sums = await storedSums(dataSource());
      expect(Object.fromEntries(Object.entries(sums).filter(([key]) => key.startsWith('view_count 3d')))).toEqual({
        'view_count 3d 1': 15,
      });
      expect(sums['view_count 24h 1']).toBe(5);
    });

    it('keeps moving no window it does not declare, and drops one no instance has moved for a day', async () => {
      const d0Ms = d0 * 1_000;
      // '3d' starts where an instance that declares it has moved it; '5d' more than a day behind.
      await storeWindow('3d', h0 - 3 * DAY, { 1: 4 });
      await storeWindow('5d', d0 - 5 * DAY - DAY - HOUR, { 1: 6, 2: 8 });
      await db.applyBatches([bucketBatch(posts, views, [[1, 'hour', h0, 1]])]);

      expect(await upkeep.advance(Date.now())).toBe(0);
      expect(await upkeep.dropAbandoned(Date.now())).toBe(1);
      expect(await storedStarts(dataSource())).toEqual({
        'view_count 24h': h0 - 24 * HOUR,
        'view_count 7d': h0 - 7 * 24 * HOUR,
        'like_count 2d': d0 - 2 * DAY,
        'view_count 3d': h0 - 3 * DAY,
      });
      expect(await storedSums(dataSource())).toEqual({
        'view_count 24h 1': 1,
        'view_count 7d 1': 1,
        'view_count 3d 1': 5,
      });
      expect(await upkeep.dropAbandoned(d0Ms + DAY * 1_000)).toBe(0);
    });
  });
});
