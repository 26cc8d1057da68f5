import request from 'supertest';
import type { App } from 'supertest/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterBucket, CounterRollingSum, CounterRollingWindow } from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { toDeltaBatch } from '../../lib/flush/claimed-batch.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, uniquePrefix, type AnyRedis } from '../../support/redis.js';
import { Clip, ROLLING_COUNT_ENTITIES, Story } from '../fixtures/rolling-count-entities.js';
import { RollingCountsController } from '../fixtures/rolling-counts.controller.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { nodeOfTrip, RoundTrips } from '../support/redis-traffic.js';
import { scriptsBySha } from '../support/script-calls.js';
import { slotOwners } from '../../support/slot-owners.js';
import { inspectionClient, moduleClient, TARGETS, unreachableClient } from '../support/topologies.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const SHARDS = 4;
/**
 * Hours kept a day longer than the week counted: `count` refuses a window whose first hour starts before
 * the oldest hour kept, which a 7-day window not starting on the hour does with hours kept 7 days.
 */
const COUNTER_OPTIONS = { shards: SHARDS, bucketRetentionMs: { hour: 8 * DAY_MS } };

interface StoryBody {
  id: number;
  viewsToday?: number;
  viewsThisWeek?: number;
}

interface ClipBody {
  id: string;
  playsLately?: number;
}

// `@LiveCounts({ windowed: true })` fills `@RollingCount()` properties with what `count` gives over their
// windows, live (G11), in every response shape, for entities of several types at once, on every
// database and topology; with Redis down, as of the last flush.
describe.each(TARGETS)('rolling counts overlaid on %s, %s', (databaseName, topology) => {
  const prefix = uniquePrefix('rolling-counts');
  const redis = inspectionClient(topology);
  let database: TestDatabase;
  let counter: CounterApp;
  let http: App;
  const others: CounterApp[] = [];
  const otherClients: AnyRedis[] = [];
  const otherPrefixes: string[] = [];
  const otherDatabases: TestDatabase[] = [];
  let nextId = 1;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      topology,
      counter: COUNTER_OPTIONS,
      entities: ROLLING_COUNT_ENTITIES,
      controllers: [RollingCountsController],
    });
    http = counter.app.getHttpServer() as App;
  });

  afterAll(async () => {
    for (const other of others) await other.close();
    await counter?.close();
    await database?.drop();
    for (const other of otherDatabases) await other.drop();
    for (const keyPrefix of [prefix, ...otherPrefixes]) await deleteKeys(redis, keyPrefix);
    for (const client of otherClients) client.disconnect();
    redis.disconnect();
  });

  const counters = () => counter.counters;
  const newStories = async (count: number, title = '') => {
    const ids = Array.from({ length: count }, () => nextId++);
    await counter.dataSource.getRepository(Story).insert(ids.map((id) => ({ id, title })));
    return ids;
  };
  const get = (path: string) => request(http).get(path).expect('Content-Type', /json/).expect(200);
  const flush = async () => expect((await counters().flush()).error).toBeUndefined();
  /** What `count` gives over the stories' two windows. */
  const counted = async (id: number) => ({
    id,
    viewsToday: await counters().count(Story, id, 'view_count', { since: Date.now() - DAY_MS }),
    viewsThisWeek: await counters().count(Story, id, 'view_count', { since: Date.now() - 7 * DAY_MS }),
  });
  const windows = ({ id, viewsToday, viewsThisWeek }: StoryBody) => ({ id, viewsToday, viewsThisWeek });

  it('fills a list, a single entity and a pagination wrapper as count does, before a flush and after it', async () => {
    const title = `paged-${nextId}`;
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
    const app = counter.app;
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

  it('never counts a change twice nor misses one while flushes move changes under the reads', async () => {
    const [id] = await newStories(1);
    let started = 0;
    let resolved = 0;
    let stop = false;
    const increments = (async () => {
      for (let i = 0; i < 150; i++) {
        started++;
        await counters().increment(Story, id, 'view_count', 1);
        resolved++;
      }
      stop = true;
    })();
    const flushes = (async () => {
      while (!stop) await flush();
    })();
    const seen: Array<{ low: number; value: number; high: number }> = [];
    while (!stop) {
      const low = resolved;
      const { body } = await get(`/rolling/stories/${id}`);
      seen.push({ low, value: (body as StoryBody).viewsToday!, high: started });
    }
    await Promise.all([increments, flushes]);
    // Each read counts every change acknowledged before it began, and none not yet made when it ended.
    expect(seen.filter(({ low, value, high }) => value < low || value > high)).toEqual([]);
    expect(seen.length).toBeGreaterThan(0);
    await flush();
    expect(windows((await get(`/rolling/stories/${id}`)).body as StoryBody)).toEqual({
      id,
      viewsToday: 150,
      viewsThisWeek: 150,
    });
  });

  it('overlays 1,100 rows through the service, more than one statement and one script call hold', async () => {
    const ids = Array.from({ length: 1_100 }, (_, i) => 100_000 + i);
    const stories = counter.dataSource.getRepository(Story);
    for (let from = 0; from < ids.length; from += 100) {
      await stories.insert(ids.slice(from, from + 100).map((id) => ({ id, title: 'many' })));
    }
    const changed = [0, 249, 250, 999, 1_000, 1_099];
    for (const i of changed.slice(0, 3)) await counters().increment(Story, ids[i], 'view_count', i + 1);
    await flush();
    for (const i of changed) await counters().increment(Story, ids[i], 'view_count', 1);
    const loaded = await stories.find({ where: { title: 'many' }, order: { id: 'ASC' } });
    const overlaid = await counters().overlay(loaded, { windowed: true });
    expect(overlaid).toBe(loaded);
    // The first three changed before the flush and after it, the others after it only.
    const changes = new Map(changed.map((i, n) => [i, n < 3 ? i + 2 : 1]));
    const expected = (i: number) => changes.get(i) ?? 0;
    expect(loaded.map(({ id, viewsToday, viewsThisWeek }) => [id, viewsToday, viewsThisWeek])).toEqual(
      ids.map((id, i) => [id, expected(i), expected(i)]),
    );
  });

  it('fills entities of two types in one result, each with its own windows', async () => {
    const [story] = await newStories(1);
    const clips = [`c-${nextId}:{eu} 1`, `c-${nextId}-2`];
    await counter.dataSource.getRepository(Clip).insert(clips.map((id) => ({ id })));
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
    const table = counter.dataSource.getMetadata(Story).tablePath;
    const old = Math.floor((Date.now() - 30 * HOUR_MS) / HOUR_MS) * 3_600;
    await counter.dataSource.getRepository(CounterBucket).insert({
      entity: table,
      counter: 'view_count',
      rowId: String(id),
      granularity: 'hour',
      start: String(old),
      value: '11',
    });
    const sums = counter.dataSource.getRepository(CounterRollingSum);
    for (const window of ['24h', '7d']) {
      const key = { entity: table, counter: 'view_count', rowId: String(id), window };
      await sums.update(key, { value: String(4 + 11) });
    }
    const day = { entity: table, counter: 'view_count', window: '24h' };
    const windowRows = counter.dataSource.getRepository(CounterRollingWindow);
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
    const table = counter.dataSource.getMetadata(Story).tablePath;
    const day = { entity: table, counter: 'view_count', window: '24h' };
    const sum = { ...day, rowId: String(id) };
    const windowRows = counter.dataSource.getRepository(CounterRollingWindow);
    const sums = counter.dataSource.getRepository(CounterRollingSum);
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

  it('answers with the values of the last flush when Redis is unreachable', async () => {
    const title = `down-${nextId}`;
    const [a, b] = await newStories(2, title);
    await counters().increment(Story, a, 'view_count', 8);
    await flush();
    await counters().increment(Story, a, 'view_count', 1);
    await counters().increment(Story, b, 'view_count', 2);

    const client = unreachableClient(topology);
    otherClients.push(client);
    const down = await startCounterApp({
      database: database.options,
      keyPrefix: uniquePrefix('rolling-counts-dead'),
      redis: client,
      synchronize: false,
      counter: { ...COUNTER_OPTIONS, flushOnShutdown: false },
      entities: ROLLING_COUNT_ENTITIES,
      controllers: [RollingCountsController],
    });
    others.push(down);
    const downHttp = down.app.getHttpServer() as App;
    const started = Date.now();
    const page = await request(downHttp).get(`/rolling/page?title=${title}&page=1&size=10`).expect(200);
    expect((page.body.items as StoryBody[]).map(windows)).toEqual([
      { id: a, viewsToday: 8, viewsThisWeek: 8 },
      { id: b, viewsToday: 0, viewsThisWeek: 0 },
    ]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await down.counters.count(Story, a, 'view_count', { since: Date.now() - DAY_MS })).toBe(8);
  });

  it('leaves the rolling counts as loaded, and logs a warning, when the database cannot read them', async () => {
    // A database of this test's own whose rolling sums are gone: every read of them fails.
    const broken = await createTestDatabase(databaseName);
    otherDatabases.push(broken);
    const keyPrefix = uniquePrefix('rolling-counts-broken');
    otherPrefixes.push(keyPrefix);
    const app = await startCounterApp({
      database: broken.options,
      keyPrefix,
      topology,
      counter: COUNTER_OPTIONS,
      entities: ROLLING_COUNT_ENTITIES,
      controllers: [RollingCountsController],
    });
    others.push(app);
    const logger = new RecordingLogger();
    app.app.useLogger(logger);
    const runner = app.dataSource.createQueryRunner();
    await runner.dropTable(app.dataSource.getMetadata(CounterRollingSum).tablePath);
    await runner.release();
    await app.dataSource.getRepository(Story).insert({ id: 1, title: 'broken' });
    await app.counters.increment(Story, 1, 'like_count', 3);

    const { body } = await request(app.app.getHttpServer() as App)
      .get('/rolling/stories/1')
      .expect(200);
    expect(body).toEqual({ id: 1, title: 'broken', viewCount: databaseName === 'sqlite' ? 0 : '0', likeCount: 3 });
    const warnings = logger.shown().filter(({ level }) => level === 'warn');
    expect(warnings.map(({ context }) => context)).toEqual(['CounterService']);
    expect(warnings[0].message).toMatch(
      /^Overlaying rolling counts failed \(The database failed while reading rolling counts \(.+\); nothing was changed\. Retry once the database is reachable\.\); they keep the values they were loaded with\.$/,
    );
  });

  it('reads a page of two entity types with one script call per shard touched, before the statement and after', async () => {
    const client = moduleClient(topology);
    otherClients.push(client);
    const keyPrefix = uniquePrefix('rolling-counts-bulk');
    otherPrefixes.push(keyPrefix);
    const app = await startCounterApp({
      database: database.options,
      keyPrefix,
      redis: client,
      synchronize: false,
      counter: COUNTER_OPTIONS,
      entities: ROLLING_COUNT_ENTITIES,
      controllers: [RollingCountsController],
    });
    others.push(app);
    // Ids in runs of 100 share a shard: these spread over every shard.
    const storyIds = Array.from({ length: 40 }, (_, i) => 10_000 + 100 * i);
    const clipIds = Array.from({ length: 40 }, (_, i) => `bulk-${nextId}-${i}`);
    await counter.dataSource.getRepository(Story).insert(storyIds.map((id) => ({ id })));
    await counter.dataSource.getRepository(Clip).insert(clipIds.map((id) => ({ id })));
    for (const [i, id] of storyIds.entries()) if (i % 3 === 0) await app.counters.increment(Story, id, 'view_count', i);
    for (const [i, id] of clipIds.entries()) if (i % 4 === 0) await app.counters.increment(Clip, id, 'play_count', i);
    const keys = new CounterKeys(keyPrefix, SHARDS);
    /** A key's hash tag: `<prefix>:{<table>:<shard>}`. */
    const tagOf = (key: string) => key.slice(0, key.indexOf('}') + 1);
    const shardsOf = (table: string, ids: Array<string | number>) => [
      ...new Set(ids.map((id) => tagOf(keys.shard(table, keys.shardOf(encodeURIComponent(String(id)))).generation))),
    ];
    const storyTable = counter.dataSource.getMetadata(Story).tablePath;
    const clipTable = counter.dataSource.getMetadata(Clip).tablePath;
    const touched = [...shardsOf(storyTable, storyIds), ...shardsOf(clipTable, clipIds)].sort();
    expect(touched).toHaveLength(2 * SHARDS);

    const roundTrips = new RoundTrips(client, keyPrefix);
    const query = `stories=${storyIds.join(',')}&clips=${clipIds.join(',')}`;
    const { body } = await request(app.app.getHttpServer() as App)
      .get(`/rolling/mixed?${query}`)
      .expect(200);
    roundTrips.stop();

    expect((body.stories as StoryBody[]).map(windows)).toEqual(
      storyIds.map((id, i) => ({ id, viewsToday: i % 3 === 0 ? i : 0, viewsThisWeek: i % 3 === 0 ? i : 0 })),
    );
    const byId = new Map((body.clips as ClipBody[]).map(({ id, playsLately }) => [id, playsLately]));
    expect(clipIds.map((id) => byId.get(id))).toEqual(clipIds.map((_, i) => (i % 4 === 0 ? i : 0)));
    // Each shard touched read twice (its changes, then its version), each call naming its own shard's keys.
    const sha = [...scriptsBySha()].find(([, name]) => name === 'nestjsCounterRollingCountRead')![0];
    const reads = roundTrips.trips.flatMap((trip) =>
      trip.args.filter((args) => args[0] === sha).map((args) => ({ trip, keys: args.slice(2, 2 + Number(args[1])) })),
    );
    expect(reads.map(({ keys: called }) => tagOf(called[0])).sort()).toEqual(
      touched.flatMap((tag) => [tag, tag]).sort(),
    );
    for (const { keys: called } of reads) expect(new Set(called.map(tagOf)).size).toBe(1);
    // In two round trips per Redis node: the reads of every shard of the node together, then the versions.
    const owner = await slotOwners(redis);
    const tripsWithReads = [...new Set(reads.map(({ trip }) => trip))];
    const nodes = new Set(tripsWithReads.map((trip) => nodeOfTrip(trip, owner)));
    expect(tripsWithReads).toHaveLength(2 * nodes.size);
  });
});
