import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CounterBucket, CounterOutOfRangeError } from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { FixedClockRedis } from '../../support/clock/fixed-clock-redis.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';
import { Post, Channel, WINDOWED_ENTITIES } from '../fixtures/windowed-entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';

/** startCounterApp's default. */
const SHARDS = 8;
const HOUR = 3_600;
const DAY = 86_400;
/** The last UTC midnight, in Unix seconds: near the app's clock, so windows stay within the retention. */
const MIDNIGHT = Math.floor(Date.now() / 1_000 / DAY) * DAY;
/** The field that keeps a pending hash a hash table (wide-hash.lua.ts); the first change makes it. */
const WIDE = '-'.repeat(65);
/** 10:00:00 UTC the day before. */
const TEN_O_CLOCK = MIDNIGHT - DAY + 10 * HOUR;

// G11: a change of a windowed counter adds its delta to the bucket of its finest granularity that holds
// the instant Redis's clock gives the change, in the same script call as the total: so a keyed retry adds
// to no bucket twice, and a refused change to none. A counter of hours and days keeps hours only (its days
// are made of them), a counter of days only keeps days.
describe('the buckets a change lands in, by Redis clock', () => {
  let clock: FixedClockRedis;
  let redis: Redis;
  let database: TestDatabase;
  let app: CounterApp;
  const prefix = uniquePrefix('buckets');
  const keys = new CounterKeys(prefix, SHARDS);

  /** The pending hash of the row's shard, all its fields. */
  const pendingOf = async (entity: typeof Post | typeof Channel, id: string | number) => {
    const table = app.dataSource.getMetadata(entity).tablePath;
    const encoded = keys.encodeId(String(id));
    const fields = await redis.hgetall(keys.shard(table, keys.shardOf(encoded)).pending);
    return Object.fromEntries(Object.entries(fields).filter(([field]) => field.startsWith(`${encoded} `)));
  };
  const at = (seconds: number, ms = 0) => clock.setTime(seconds * 1_000 + ms);
  /** The row's buckets in the database, as [counter, granularity, start, value], in that order. */
  const storedOf = async (id: number) => {
    const entity = app.dataSource.getMetadata(Post).tablePath;
    const rows = await app.dataSource.getRepository(CounterBucket).findBy({ entity, rowId: String(id) });
    return rows
      .map((row) => [row.counter, row.granularity, Number(row.start), Number(row.value)] as const)
      .sort((a, b) => a[0].localeCompare(b[0]) || a[1].localeCompare(b[1]) || a[2] - b[2]);
  };

  beforeAll(async () => {
    clock = await FixedClockRedis.start();
    redis = new Redis(clock.url, RESP2);
    database = await createTestDatabase(DATABASES[0]);
    app = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      entities: WINDOWED_ENTITIES,
      counter: { redis: clock.url },
    });
  });
  afterAll(async () => {
    await app?.close();
    await database?.drop();
    redis?.disconnect();
    await clock?.stop();
  });
  let nextId = 1;
  let id: number;
  beforeEach(async () => {
    id = nextId++;
    await app.dataSource.getRepository(Post).insert({ id, viewCount: 0, likeCount: 0, shareCount: 0 });
  });

  it('puts a change in the last millisecond of an hour in that hour, one in its first in the next', async () => {
    at(TEN_O_CLOCK + HOUR - 1, 999);
    await app.counters.increment(Post, id, 'view_count', 2);
    at(TEN_O_CLOCK + HOUR);
    await app.counters.increment(Post, id, 'view_count', 3);
    expect(await pendingOf(Post, id)).toEqual({
      [`${id} view_count`]: '5',
      [`${id} view_count@h${TEN_O_CLOCK}`]: '2',
      [`${id} view_count@h${TEN_O_CLOCK + HOUR}`]: '3',
    });
  });

  it('puts a change in the last millisecond of a day (UTC) in that day, one in its first in the next', async () => {
    at(MIDNIGHT - 1, 999);
    await app.counters.increment(Post, id, 'view_count');
    await app.counters.increment(Post, id, 'like_count', 4);
    at(MIDNIGHT);
    await app.counters.increment(Post, id, 'view_count', 6);
    await app.counters.increment(Post, id, 'like_count');
    expect(await pendingOf(Post, id)).toEqual({
      [`${id} view_count`]: '7',
      [`${id} view_count@h${MIDNIGHT - HOUR}`]: '1',
      [`${id} view_count@h${MIDNIGHT}`]: '6',
      // like_count keeps days only.
      [`${id} like_count`]: '5',
      [`${id} like_count@d${MIDNIGHT - DAY}`]: '4',
      [`${id} like_count@d${MIDNIGHT}`]: '1',
    });
    // view_count's days are its hours added up: live, and as the flush stores them (hours only).
    const days = { granularity: 'day' as const, since: (MIDNIGHT - DAY) * 1_000, until: (MIDNIGHT + DAY) * 1_000 };
    const expected = [
      { start: new Date((MIDNIGHT - DAY) * 1_000), value: 1 },
      { start: new Date(MIDNIGHT * 1_000), value: 6 },
    ];
    expect(await app.counters.series(Post, id, 'view_count', days)).toEqual(expected);
    expect((await app.counters.flush()).error).toBeUndefined();
    expect(await storedOf(id)).toEqual([
      ['like_count', 'day', MIDNIGHT - DAY, 4],
      ['like_count', 'day', MIDNIGHT, 1],
      ['view_count', 'hour', MIDNIGHT - HOUR, 1],
      ['view_count', 'hour', MIDNIGHT, 6],
    ]);
    expect(await app.counters.series(Post, id, 'view_count', days)).toEqual(expected);
  });

  it('adds decrements as negative changes, so a bucket holds its net change', async () => {
    at(TEN_O_CLOCK + 60);
    await app.counters.increment(Post, id, 'view_count', 10);
    at(TEN_O_CLOCK + HOUR + 60);
    await app.counters.decrement(Post, id, 'view_count', 4);
    expect(await pendingOf(Post, id)).toEqual({
      [`${id} view_count`]: '6',
      [`${id} view_count@h${TEN_O_CLOCK}`]: '10',
      [`${id} view_count@h${TEN_O_CLOCK + HOUR}`]: '-4',
    });
  });

  it('adds a keyed change retried across an hour to its first bucket only', async () => {
    at(TEN_O_CLOCK + HOUR - 1);
    const first = await app.counters.change(Post, id, 'view_count', 3, { idempotencyKey: 'view-1' });
    at(TEN_O_CLOCK + HOUR + 1);
    const retry = await app.counters.change(Post, id, 'view_count', 3, { idempotencyKey: 'view-1' });
    expect([first, retry]).toEqual([
      { value: 3, applied: true },
      { value: 3, applied: false },
    ]);
    expect(await pendingOf(Post, id)).toEqual({
      [`${id} view_count`]: '3',
      [`${id} view_count@h${TEN_O_CLOCK}`]: '3',
    });
  });

  it('adds a refused change to no bucket, and a set to none either', async () => {
    at(TEN_O_CLOCK + 30);
    await app.counters.increment(Post, id, 'like_count', 2);
    await expect(app.counters.decrement(Post, id, 'like_count', 3)).rejects.toBeInstanceOf(CounterOutOfRangeError);
    await app.counters.set(Post, id, 'like_count', 9);
    await app.counters.increment(Post, id, 'share_count', 5);
    expect(await pendingOf(Post, id)).toEqual({
      [`${id} like_count`]: '9',
      [`${id} like_count@d${MIDNIGHT - DAY}`]: '2',
      // share_count keeps no buckets.
      [`${id} share_count`]: '5',
    });
  });

  it('adds changes of one row made in one call to the buckets of their instant', async () => {
    at(TEN_O_CLOCK + 120);
    await Promise.all([
      app.counters.increment(Post, id, 'view_count', 1),
      app.counters.increment(Post, id, 'view_count', 2),
      app.counters.decrement(Post, id, 'like_count', 0),
      app.counters.increment(Post, id, 'like_count', 7),
    ]);
    expect(await pendingOf(Post, id)).toEqual({
      [`${id} view_count`]: '3',
      [`${id} view_count@h${TEN_O_CLOCK}`]: '3',
      [`${id} like_count`]: '7',
      [`${id} like_count@d${MIDNIGHT - DAY}`]: '7',
    });
  });

  it('names the buckets of a string id by its encoded id', async () => {
    const channel = 'a b:{c}@d';
    await app.dataSource.getRepository(Channel).insert({ id: channel, viewCount: 0 });
    at(TEN_O_CLOCK + 5);
    await app.counters.increment(Channel, channel, 'view_count', 2);
    const encoded = encodeURIComponent(channel);
    expect(await pendingOf(Channel, channel)).toEqual({
      [`${encoded} view_count`]: '2',
      [`${encoded} view_count@h${TEN_O_CLOCK}`]: '2',
    });
  });
});

// A claim moves each row's bucket fields with its changes: all of them when it takes the whole shard,
// those from the row's dirty-set score on when it takes some rows; an ack drops a deleted row's.
describe('the buckets a claim takes', () => {
  let clock: FixedClockRedis;
  let redis: Redis;
  let database: TestDatabase;
  let app: CounterApp;
  const prefix = uniquePrefix('bucket-claims');
  const keys = new CounterKeys(prefix, SHARDS);
  let shard: ReturnType<CounterKeys['shard']>;
  let store: FlushStore;
  let scriptNames: string[];
  const at = (seconds: number) => clock.setTime(seconds * 1_000);
  const claim = (batchId: string, limit: number) =>
    store.claim(shard, { counters: scriptNames, numericIds: true, token: 't', leaseMs: 10_000, batchId, limit });

  beforeAll(async () => {
    clock = await FixedClockRedis.start();
    redis = new Redis(clock.url, RESP2);
    database = await createTestDatabase(DATABASES[0]);
    app = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      entities: WINDOWED_ENTITIES,
      counter: { redis: clock.url },
    });
    const posts = app.app.get(CounterRegistry).get(Post);
    scriptNames = posts.scriptNames;
    // Ids 1 to 99 share a shard (shards go by runs of 100 ids).
    shard = keys.shard(posts.key, keys.shardOf('1'));
    store = app.app.get(FlushStore);
    await app.dataSource
      .getRepository(Post)
      .insert([1, 2, 3].map((id) => ({ id, viewCount: 0, likeCount: 0, shareCount: 0 })));
  });
  afterAll(async () => {
    await app?.close();
    await database?.drop();
    redis?.disconnect();
    await clock?.stop();
  });

  it('takes the oldest rows with every bucket since each became dirty, and leaves the others pending', async () => {
    at(TEN_O_CLOCK + 1_800);
    for (const id of [1, 2, 3]) await app.counters.increment(Post, id, 'view_count', id);
    at(TEN_O_CLOCK + 2 * HOUR + 600);
    for (const id of [1, 2, 3]) await app.counters.increment(Post, id, 'view_count', 10);
    await app.counters.increment(Post, 1, 'like_count', 2);

    const claimed = await claim('b-1', 2);
    expect(claimed).toMatchObject({ kind: 'batch', batchId: 'b-1', moreRows: 1 });
    const { '#id': id, '#at': _at, '#since': since, '#rows': rows, ...batch } = await redis.hgetall(shard.batch);
    expect({ id, since, rows }).toEqual({ id: 'b-1', since: String((TEN_O_CLOCK + 1_800) * 1_000), rows: '2' });
    expect(batch).toEqual({
      '1 view_count': '11',
      [`1 view_count@h${TEN_O_CLOCK}`]: '1',
      [`1 view_count@h${TEN_O_CLOCK + 2 * HOUR}`]: '10',
      '1 like_count': '2',
      [`1 like_count@d${MIDNIGHT - DAY}`]: '2',
      '2 view_count': '12',
      [`2 view_count@h${TEN_O_CLOCK}`]: '2',
      [`2 view_count@h${TEN_O_CLOCK + 2 * HOUR}`]: '10',
    });
    expect(await redis.hgetall(shard.pending)).toEqual({
      '#wide': WIDE,
      '3 view_count': '13',
      [`3 view_count@h${TEN_O_CLOCK}`]: '3',
      [`3 view_count@h${TEN_O_CLOCK + 2 * HOUR}`]: '10',
    });
    if (claimed.kind !== 'batch') throw new Error('no batch');
    expect(claimed.rows.buckets?.deltas).toHaveLength(5);
  });

  it("drops the buckets a deleted row's later changes made, with them, when its batch is acknowledged", async () => {
    at(TEN_O_CLOCK + 3 * HOUR + 5);
    await app.counters.increment(Post, 1, 'view_count', 4);
    expect(await store.ack(shard, 'b-1', 't', false, scriptNames, ['1'])).toBe(true);
    expect(await redis.zrange(shard.dirty, '0', '-1')).toEqual(['3']);
    expect(await redis.hgetall(shard.pending)).toEqual({
      '#wide': WIDE,
      '3 view_count': '13',
      [`3 view_count@h${TEN_O_CLOCK}`]: '3',
      [`3 view_count@h${TEN_O_CLOCK + 2 * HOUR}`]: '10',
    });
  });

  it('takes a whole shard with all its buckets, and the given-back ones of the granularities it keeps', async () => {
    await redis.hset(shard.unknown, {
      '#at': String((TEN_O_CLOCK + 3 * HOUR) * 1_000),
      [`2 view_count@h${TEN_O_CLOCK}`]: '5',
      // like_count keeps no hours: left for a deployment that does.
      [`2 like_count@h${TEN_O_CLOCK}`]: '6',
    });
    expect(await claim('b-2', 1_000)).toMatchObject({ kind: 'batch', batchId: 'b-2', moreRows: 0 });
    const { '#id': _id, '#at': _at, '#since': _since, '#rows': _rows, ...batch } = await redis.hgetall(shard.batch);
    expect(batch).toEqual({
      '#wide': WIDE,
      '3 view_count': '13',
      [`3 view_count@h${TEN_O_CLOCK}`]: '3',
      [`3 view_count@h${TEN_O_CLOCK + 2 * HOUR}`]: '10',
      [`2 view_count@h${TEN_O_CLOCK}`]: '5',
    });
    expect(await redis.hgetall(shard.unknown)).toEqual({
      '#at': String((TEN_O_CLOCK + 3 * HOUR) * 1_000),
      [`2 like_count@h${TEN_O_CLOCK}`]: '6',
    });
    // The new pending hash holds only the field that keeps it a hash table (wide-hash.lua.ts).
    expect(await redis.hkeys(shard.pending)).toEqual(['#wide']);
    expect(await redis.exists(shard.dirty)).toBe(0);
  });
});
