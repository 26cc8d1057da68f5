import { describe, expect, it } from 'vitest';
import { CounterBucket, CounterRollingSum, CounterRollingWindow } from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { toDeltaBatch } from '../../lib/flush/claimed-batch.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { Clip, Story } from '../fixtures/rolling-count-entities.js';
import {
  DAY_MS,
  HOUR_MS,
  useRollingCountsSuite,
  windows,
  type ClipBody,
  type StoryBody,
} from '../support/rolling-counts-suite.js';
import { TARGETS } from '../support/topologies.js';

// `@LiveCounts({ windowed: true })` fills `@RollingCount()` properties with what `count` gives over their
// windows, live (G11), in every response shape, for entities of several types at once, whatever the
// windows' stored start, on every database and topology.
describe.each(TARGETS)('rolling counts overlaid on %s, %s', (databaseName, topology) => {
  const suite = useRollingCountsSuite(databaseName, topology, 'rolling-counts');
  const { counters, newStories, get, flush, counted, unique } = suite;

  it('fills a list, a single entity and a pagination wrapper as count does, before a flush and after it', async () => {
    const title = `paged-${unique()}`;
    const [a, b, c] = await newStories(3, title);
    await counters().increment(Story, a, 'view_count', 5);
    await counters().decrement(Story, a, 'view_count', 2);
    await counters().increment(Story, b, 'view_count', 7);
    await counters().increment(Story, c, 'like_count', 4);
    const expected = [
      { id: a, viewsToday: 3, viewsThisWeek: 3 },
      { id: b, viewsToday: 7, viewsThisWeek: 7 },
      { id: c, viewsToday: 0, viewsThisWeek: 0 },
    ];
    const check = async () => {
      expect(await Promise.all([a, b, c].map(counted))).toEqual(expected);
      expect(((await get(`/rolling/stories?ids=${a},${b},${c}`)).body as StoryBody[]).map(windows)).toEqual(expected);
      expect(windows((await get(`/rolling/stories/${b}`)).body as StoryBody)).toEqual(expected[1]);
      const page = await get(`/rolling/page?title=${title}&page=2&size=2`);
      expect((page.body.items as StoryBody[]).map(windows)).toEqual([expected[2]]);
      expect([page.body.total, page.body.page]).toEqual([3, 2]);
    };
    await check();
    await flush();
    await check();
    // Stored sums plus the changes made since.
    await counters().increment(Story, c, 'view_count', 6);
    expected[2] = { id: c, viewsToday: 6, viewsThisWeek: 6 };
    await check();
    // The totals are overlaid as well.
    expect((await get(`/rolling/stories/${a}`)).body).toMatchObject({ viewCount: expect.anything(), likeCount: 0 });
    expect((await get(`/rolling/stories/${c}`)).body.likeCount).toBe(4);
  });

  it('counts a batch in flight once, whether the database has it yet or not', async () => {
    const [id] = await newStories(1);
    await counters().increment(Story, id, 'view_count', 3);
    const app = suite.counter.app;
    const stories = app.get(CounterRegistry).get(Story);
    const keys = app.get(CounterKeys);
    const shard = keys.shard(stories.key, keys.shardOf(String(id)));
    const store = app.get(FlushStore);
    const claim = await store.claim(shard, {
      counters: stories.scriptNames,
      numericIds: true,
      token: 'test',
      leaseMs: 30_000,
      batchId: `rolling-counts-${id}`,
      limit: 1_000,
    });
    if (claim.kind !== 'batch') throw new Error(`no batch claimed: ${claim.kind}`);
    const expected = { id, viewsToday: 4, viewsThisWeek: 4 };
    const check = async () => {
      expect(await counted(id)).toEqual(expected);
      expect(windows((await get(`/rolling/stories/${id}`)).body as StoryBody)).toEqual(expected);
    };
    // Claimed, not written: in Redis's batch only.
    await counters().increment(Story, id, 'view_count', 1);
    await check();
    // Written, not acknowledged: in the database and still in Redis's batch.
    const { batch } = toDeltaBatch(keys, stories, shard.shard, claim.batchId, claim.rows);
    expect(await app.get(CounterDatabase).applyBatches([batch])).toMatchObject({ applied: true });
    await check();
    expect(await store.ack(shard, claim.batchId, 'test', true, stories.scriptNames, [])).toBe(true);
    await check();
    await flush();
    await check();
  });

  it('fills entities of two types in one result, each with its own windows', async () => {
    const [story] = await newStories(1);
    const n = unique();
    const clips = [`c-${n}:{eu} 1`, `c-${n}-2`];
    await suite.counter.dataSource.getRepository(Clip).insert(clips.map((id) => ({ id })));
    await counters().increment(Story, story, 'view_count', 2);
    await counters().increment(Clip, clips[0], 'play_count', 9);
    await flush();
    await counters().increment(Clip, clips[0], 'play_count', 1);
    await counters().increment(Clip, clips[1], 'play_count', 5);
    const since = Date.now() - 2 * DAY_MS;
    expect(await counters().count(Clip, clips[0], 'play_count', { since })).toBe(10);
    expect(await counters().count(Clip, clips[1], 'play_count', { since })).toBe(5);

    const query = `stories=${story}&clips=${clips.map(encodeURIComponent).join(',')}`;
    const { body } = await get(`/rolling/mixed?${query}`);
    expect((body.stories as StoryBody[]).map(windows)).toEqual([{ id: story, viewsToday: 2, viewsThisWeek: 2 }]);
    expect((body.clips as ClipBody[]).map(({ id, playsLately }) => ({ id, playsLately }))).toEqual([
      { id: clips[1], playsLately: 5 },
      { id: clips[0], playsLately: 10 },
    ]);
  });

  it('leaves out what a window no longer counts while its stored start is behind', async () => {
    const [id] = await newStories(1);
    await counters().increment(Story, id, 'view_count', 4);
    await flush();
    // An hour of 30 hours ago, as a flush then would have left it: in the week's sum and, the day's
    // window not yet moved on past it, in the day's sum too.
    const table = suite.counter.dataSource.getMetadata(Story).tablePath;
    const old = Math.floor((Date.now() - 30 * HOUR_MS) / HOUR_MS) * 3_600;
    await suite.counter.dataSource.getRepository(CounterBucket).insert({
      entity: table,
      counter: 'view_count',
      rowId: String(id),
      granularity: 'hour',
      start: String(old),
      value: '11',
    });
    const sums = suite.counter.dataSource.getRepository(CounterRollingSum);
    for (const window of ['24h', '7d']) {
      const key = { entity: table, counter: 'view_count', rowId: String(id), window };
      await sums.update(key, { value: String(4 + 11) });
    }
    const day = { entity: table, counter: 'view_count', window: '24h' };
    const windowRows = suite.counter.dataSource.getRepository(CounterRollingWindow);
    const { from } = await windowRows.findOneByOrFail(day);
    await windowRows.update(day, { from: String(Math.min(Number(from), old)) });

    const expected = { id, viewsToday: 4, viewsThisWeek: 15 };
    expect(await counted(id)).toEqual(expected);
    expect(windows((await get(`/rolling/stories/${id}`)).body as StoryBody)).toEqual(expected);
  });

  it('counts what a window counts while its stored start is ahead (another instance moved it on first)', async () => {
    const [id] = await newStories(1);
    await counters().increment(Story, id, 'view_count', 4);
    await flush();
    // The day's window moved past the current hour, as an instance whose clock is ahead would leave it:
    // its sum no longer holds the hour's 4. Both are put back afterwards, for the tests that follow.
    const table = suite.counter.dataSource.getMetadata(Story).tablePath;
    const day = { entity: table, counter: 'view_count', window: '24h' };
    const sum = { ...day, rowId: String(id) };
    const windowRows = suite.counter.dataSource.getRepository(CounterRollingWindow);
    const sums = suite.counter.dataSource.getRepository(CounterRollingSum);
    const { from } = await windowRows.findOneByOrFail(day);
    const nextHour = String((Math.floor(Date.now() / HOUR_MS) + 1) * 3_600);
    await windowRows.update(day, { from: nextHour });
    await sums.update(sum, { value: '0' });
    try {
      const expected = { id, viewsToday: 4, viewsThisWeek: 4 };
      expect(await counted(id)).toEqual(expected);
      expect(windows((await get(`/rolling/stories/${id}`)).body as StoryBody)).toEqual(expected);
    } finally {
      await windowRows.update(day, { from });
      await sums.update(sum, { value: '4' });
    }
  });

  it('keeps @LiveCounts() to the totals', async () => {
    const [id] = await newStories(1);
    await counters().increment(Story, id, 'view_count', 2);
    const { body } = await get(`/rolling/totals/${id}`);
    expect(body).not.toHaveProperty('viewsToday');
    expect(body).not.toHaveProperty('viewsThisWeek');
  });
});
