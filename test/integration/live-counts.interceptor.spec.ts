import calculateSlot from 'cluster-key-slot';
import request from 'supertest';
import type { App } from 'supertest/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, DATABASES, type DatabaseName, type TestDatabase } from '../../support/databases.js';
import { Article, Remark, Score } from '../fixtures/entities.js';
import { LIVE_COUNTS_CONTROLLERS, ScoresController } from '../fixtures/live-counts.controller.js';
import { deleteKeys, uniquePrefix, type AnyRedis } from '../../support/redis.js';
import { nodeOfTrip, RedisTraffic, RoundTrips, type RoundTrip } from '../support/redis-traffic.js';
import { slotOwners } from '../../support/slot-owners.js';
import { scriptArguments } from '../support/script-calls.js';
import { inspectionClient, moduleClient, TARGETS, unreachableClient } from '../support/topologies.js';

const SHARDS = 4;

interface ArticleBody {
  id: number;
  title: string;
  likeCount: number;
  viewCount: number | string;
  remarks?: RemarkBody[];
}

interface RemarkBody {
  id: string;
  replyCount: number;
  article?: ArticleBody;
}

/**
 * A `bigint` column's value as TypeORM hydrates it with the drivers' defaults: text from pg and mysql2
 * (`bigNumberStrings`), a number from better-sqlite3.
 */
const bigint = (database: DatabaseName, count: number) => (database === 'sqlite' ? count : String(count));

/** The shard number in a key's hash tag: `<prefix>:{<table>:<shard>}:…`. */
const shardOfKey = (key: string) => Number(/\{[^}]*:(\d+)\}/.exec(key)?.[1]);

// The CounterInterceptor, end to end over HTTP: live values in every response shape, one Redis round
// trip per request and Redis node, and database values when Redis is down (G2, G7).
describe.each(TARGETS)('live counts interceptor on %s, %s', (databaseName, topology) => {
  const prefix = uniquePrefix('live-http');
  const redis = inspectionClient(topology);
  /** The client the module uses: ours, so its traffic can be counted. */
  const client = moduleClient(topology);
  let database: TestDatabase;
  let counter: CounterApp;
  let http: App;
  let traffic: RedisTraffic;
  let roundTrips: RoundTrips;
  const others: CounterApp[] = [];
  const otherClients: AnyRedis[] = [];
  const otherPrefixes: string[] = [];
  const big = (count: number) => bigint(databaseName, count);

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      redis: client,
      counter: { shards: SHARDS },
      controllers: LIVE_COUNTS_CONTROLLERS,
    });
    http = counter.app.getHttpServer() as App;
    traffic = await RedisTraffic.start(redis, prefix);
    roundTrips = new RoundTrips(client, prefix);
  });

  afterAll(async () => {
    roundTrips?.stop();
    traffic?.stop();
    for (const other of others) await other.close();
    await counter?.close();
    await database?.drop();
    for (const keyPrefix of [prefix, ...otherPrefixes]) await deleteKeys(redis, keyPrefix);
    for (const other of otherClients) other.disconnect();
    client.disconnect();
    redis.disconnect();
  });

  const articles = () => counter.dataSource.getRepository(Article);
  const remarks = () => counter.dataSource.getRepository(Remark);
  const insertArticle = (likeCount: number, viewCount: number, title = 'a') =>
    articles().save(articles().create({ title, likeCount, viewCount }));
  const articleTable = () => counter.dataSource.getMetadata(Article).tablePath;
  const shardOf = (table: string, id: string | number, keyPrefix = prefix) => {
    const keys = new CounterKeys(keyPrefix, SHARDS);
    return keys.shard(table, keys.shardOf(encodeURIComponent(String(id))));
  };
  const rowKey = (table: string, id: string | number, keyPrefix = prefix) =>
    shardOf(table, id, keyPrefix).row(encodeURIComponent(String(id)));
  const storedArticle = async (id: number) => {
    const row = await articles().findOneByOrFail({ id });
    return { likeCount: row.likeCount, viewCount: Number(row.viewCount) };
  };
  const get = (path: string) => request(http).get(path).expect('Content-Type', /json/).expect(200);
  const live = (body: ArticleBody) => ({ id: body.id, likeCount: body.likeCount, viewCount: body.viewCount });

  it('overlays live values on a single entity, without flushing them', async () => {
    const article = await insertArticle(10, 100);
    expect(await counter.counters.increment(Article, article.id, 'like_count', 5)).toBe(15);
    expect(await counter.counters.increment(Article, article.id, 'view_count', 7)).toBe(107);

    const { body } = await get(`/live/articles/${article.id}`);
    expect(body).toEqual({ id: article.id, title: 'a', likeCount: 15, viewCount: big(107) });
    expect(await storedArticle(article.id)).toEqual({ likeCount: 10, viewCount: 100 });
  });

  it('seeds a row Redis has never seen from the database on the miss', async () => {
    const article = await insertArticle(7, 70);
    const key = rowKey(articleTable(), article.id);
    expect(await redis.exists(key)).toBe(0);

    const first = await get(`/live/articles/${article.id}`);
    expect(first.body).toEqual({ id: article.id, title: 'a', likeCount: 7, viewCount: big(70) });
    expect(await redis.hgetall(key)).toEqual({ 'v:like_count': '7', 'v:view_count': '70' });

    expect(await counter.counters.increment(Article, article.id, 'like_count')).toBe(8);
    const second = await get(`/live/articles/${article.id}`);
    expect(second.body).toEqual({ id: article.id, title: 'a', likeCount: 8, viewCount: big(70) });
  });

  it('overlays every entity of an array, seen and unseen', async () => {
    const seen = await insertArticle(1, 10);
    const unseen = await insertArticle(2, 20);
    const decremented = await insertArticle(3, 30);
    expect(await counter.counters.increment(Article, seen.id, 'view_count', 5)).toBe(15);
    expect(await counter.counters.decrement(Article, decremented.id, 'like_count', 3)).toBe(0);

    const { body } = await get(`/live/articles?ids=${seen.id},${unseen.id},${decremented.id}`);
    expect((body as ArticleBody[]).map(live)).toEqual([
      { id: seen.id, likeCount: 1, viewCount: big(15) },
      { id: unseen.id, likeCount: 2, viewCount: big(20) },
      { id: decremented.id, likeCount: 0, viewCount: big(30) },
    ]);
  });

  it('overlays the items of a pagination wrapper and leaves the wrapper alone', async () => {
    const created: Article[] = [];
    for (let i = 0; i < 5; i++) created.push(await insertArticle(i, 1_000 + i, 'paged'));
    await counter.counters.increment(Article, created[1].id, 'like_count', 10);
    await counter.counters.increment(Article, created[3].id, 'like_count', 20);
    await counter.counters.increment(Article, created[4].id, 'view_count', 30);

    const { body } = await get('/live/page?title=paged&page=2&size=2');
    expect(body).toEqual({
      items: [
        { id: created[2].id, title: 'paged', likeCount: 2, viewCount: big(1_002) },
        { id: created[3].id, title: 'paged', likeCount: 23, viewCount: big(1_003) },
      ],
      total: 5,
      page: 2,
    });
    const last = await get('/live/page?title=paged&page=3&size=2');
    expect(last.body).toEqual({
      items: [{ id: created[4].id, title: 'paged', likeCount: 4, viewCount: big(1_034) }],
      total: 5,
      page: 3,
    });
  });

  it('overlays counted entities inside a loaded relation, and the relation of a counted entity', async () => {
    const article = await insertArticle(5, 50);
    const ids = [`r-${prefix}-1`, `r-${prefix}-2:{x}`, `r-${prefix}-3`];
    await remarks().save(ids.map((id, i) => remarks().create({ id, replyCount: 10 * (i + 1), article })));
    expect(await counter.counters.increment(Remark, ids[0], 'reply_count', 4)).toBe(14);
    expect(await counter.counters.decrement(Remark, ids[1], 'reply_count', 5)).toBe(15);
    expect(await counter.counters.increment(Article, article.id, 'like_count', 2)).toBe(7);

    const { body } = await get(`/live/articles/${article.id}/remarks`);
    expect(live(body as ArticleBody)).toEqual({ id: article.id, likeCount: 7, viewCount: big(50) });
    expect(((body as ArticleBody).remarks ?? []).map(({ id, replyCount }) => ({ id, replyCount }))).toEqual([
      { id: ids[0], replyCount: 14 },
      { id: ids[1], replyCount: 15 },
      { id: ids[2], replyCount: 30 },
    ]);

    const remark = await get(`/live/remarks/${encodeURIComponent(ids[1])}`);
    expect((remark.body as RemarkBody).replyCount).toBe(15);
    expect(live((remark.body as RemarkBody).article!)).toEqual({ id: article.id, likeCount: 7, viewCount: big(50) });
  });

  it('overlays entities of several kinds in any order, each with its own counters', async () => {
    // Entities alternate, so a read call's shards switch between the two entities' counter names.
    const first = await insertArticle(1, 10);
    const second = await insertArticle(2, 20);
    const ids = [`m-${prefix}-1`, `m-${prefix}-2`, `m-${prefix}-3`];
    const saved = await remarks().save(ids.map((id, i) => remarks().create({ id, replyCount: 100 * (i + 1) })));
    expect(await counter.counters.increment(Remark, ids[1], 'reply_count', 5)).toBe(205);
    expect(await counter.counters.increment(Article, second.id, 'view_count', 7)).toBe(27);
    expect(await counter.counters.increment(Article, first.id, 'like_count', 3)).toBe(4);

    // Copies as the database has them: the values the overlay must replace.
    const mixed = () => [
      Object.assign(new Remark(), saved[0]),
      Object.assign(new Article(), first),
      Object.assign(new Remark(), saved[1]),
      Object.assign(new Article(), second),
      Object.assign(new Remark(), saved[2]),
    ];
    const liveValues = (entities: Array<Article | Remark>) =>
      entities.map((entity) =>
        entity instanceof Remark ? [entity.id, entity.replyCount] : [entity.id, entity.likeCount, entity.viewCount],
      );
    const expected = [
      [ids[0], 100],
      [first.id, 4, big(10)],
      [ids[1], 205],
      [second.id, 2, big(27)],
      [ids[2], 300],
    ];
    // The first overlay seeds the two remarks never read; the second finds every row in Redis.
    expect(liveValues(await counter.counters.overlay(mixed()))).toEqual(expected);
    roundTrips.reset();
    expect(liveValues(await counter.counters.overlay(mixed()))).toEqual(expected);
    // Read, not seeded again: a row read under the other entity's counter names would look unseeded.
    const calls = roundTrips.trips.flatMap((trip) => trip.keys);
    const seedCalls = calls.filter((keys) => keys.some((key) => key.endsWith(':batch')));
    expect(seedCalls).toEqual([]);
    if (topology === 'standalone') expect(roundTrips.trips.map((trip) => trip.commands)).toEqual([['evalsha']]);
  });

  it('overlays entities nested in plain objects and arrays', async () => {
    const featured = await insertArticle(100, 1_000);
    const other = await insertArticle(200, 2_000);
    await counter.counters.increment(Article, featured.id, 'like_count', 11);
    await counter.counters.increment(Article, other.id, 'view_count', 22);

    const { body } = await get(`/live/nested?ids=${featured.id},${other.id}`);
    expect(body).toEqual({
      data: {
        featured: { id: featured.id, title: 'a', likeCount: 111, viewCount: big(1_000) },
        meta: { source: 'db' },
      },
      sections: [
        {
          title: 'others',
          entries: [{ rank: other.id, article: { id: other.id, title: 'a', likeCount: 200, viewCount: big(2_022) } }],
        },
      ],
    });
  });

  it('answers null, empty and non-entity results unchanged, without touching Redis', async () => {
    const article = await insertArticle(3, 4);
    await counter.counters.increment(Article, article.id, 'like_count', 6);
    await traffic.reset(redis);
    roundTrips.reset();

    const none = await request(http).get('/live/null').expect(200);
    expect(none.text).toBe('');
    const empty = await get('/live/empty');
    expect(empty.body).toEqual([]);
    const plain = await get(`/live/plain/${article.id}`);
    expect(plain.body).toEqual({
      id: article.id,
      title: 'not an entity',
      likeCount: -1,
      viewCount: -2,
      tags: ['a', 'b'],
      at: 42,
    });

    expect(await traffic.seen(redis)).toEqual([]);
    expect(roundTrips.trips).toEqual([]);
  });

  it('works as @UseInterceptors(CounterInterceptor) on a controller', async () => {
    const first = await insertArticle(9, 90);
    const second = await insertArticle(8, 80);
    await counter.counters.increment(Article, first.id, 'like_count', 91);
    await counter.counters.decrement(Article, second.id, 'view_count', 81);

    const one = await get(`/intercepted/articles/${first.id}`);
    expect(one.body).toEqual({ id: first.id, title: 'a', likeCount: 100, viewCount: big(90) });
    const many = await get(`/intercepted/articles?ids=${first.id},${second.id}`);
    expect((many.body as ArticleBody[]).map(live)).toEqual([
      { id: first.id, likeCount: 100, viewCount: big(90) },
      { id: second.id, likeCount: 8, viewCount: big(-1) },
    ]);
  });

  it('reads a page of 100 seeded articles with one script call per slot (one in all on a single Redis), in one round trip per Redis node', async () => {
    const page = await articles().save(
      Array.from({ length: 100 }, (_, i) => articles().create({ title: 'bulk', likeCount: i, viewCount: 2 * i })),
    );
    page.sort((a, b) => a.id - b.id);
    // Seed every row, then change a few of them.
    await get('/live/page?title=bulk&page=1&size=100');
    for (const [index, by] of [
      [0, 3],
      [41, 5],
      [99, 7],
    ] as const) {
      await counter.counters.increment(Article, page[index].id, 'like_count', by);
    }
    const keys = new CounterKeys(prefix, SHARDS);
    const expectedShards = [
      ...new Set(page.map((article) => keys.shardOf(encodeURIComponent(String(article.id))))),
    ].sort();
    const tag = (shard: number) => keys.shard(articleTable(), shard).tag;
    const owner = await slotOwners(redis);
    const expectedNodes = [
      ...new Set(expectedShards.map((shard) => owner(keys.shard(articleTable(), shard).slot))),
    ].sort();

    await traffic.reset(redis);
    roundTrips.reset();
    const { body } = await get('/live/page?title=bulk&page=1&size=100');
    const commands = await traffic.seen(redis);

    expect(body.total).toBe(100);
    expect(body.page).toBe(1);
    expect((body.items as ArticleBody[]).map(live)).toEqual(
      page.map((article, i) => ({
        id: article.id,
        likeCount: i + (i === 0 ? 3 : i === 41 ? 5 : i === 99 ? 7 : 0),
        viewCount: big(2 * i),
      })),
    );
    // On a cluster one script command per shard touched (a script's keys share one slot), each naming
    // keys of that shard only; on a single Redis one command for all of them.
    const byNumber = (a: number, b: number) => a - b;
    const touched = [...expectedShards].sort(byNumber);
    const perCommand = topology === 'cluster' ? touched.map((shard) => [shard]) : [touched];
    expect(commands).toHaveLength(perCommand.length);
    for (const command of commands) expect(['evalsha', 'eval']).toContain(command[0].toLowerCase());
    // Each command declares, per shard, its generation and the rows it reads (see read.lua.ts).
    const keysPerCommand = commands.map(([, ...args]) => scriptArguments({ args }).keys);
    const shardsPerCommand = keysPerCommand.map((keysOfCommand) =>
      [...new Set(keysOfCommand.map(shardOfKey))].sort(byNumber),
    );
    expect(shardsPerCommand.sort((a, b) => a[0] - b[0])).toEqual(perCommand);
    for (const keysOfCommand of keysPerCommand) {
      expect(keysOfCommand.every((key) => key.startsWith(`${tag(shardOfKey(key))}:`))).toBe(true);
    }
    // Every row of the page, once.
    const rowKeys = keysPerCommand.flat().filter((key) => key.includes(':r:'));
    expect(rowKeys.sort()).toEqual(
      page
        .map((article) => keys.shard(articleTable(), keys.shardOf(String(article.id))).row(String(article.id)))
        .sort(),
    );
    // And they went out in one round trip per node that serves a touched shard (a pipeline, or the call
    // alone when it is the only one), all at once on a single Redis.
    const { trips } = roundTrips;
    const nodeOf = (trip: RoundTrip) => nodeOfTrip(trip, owner);
    expect(trips.map(nodeOf).sort()).toEqual(expectedNodes);
    if (topology === 'standalone') expect(trips).toHaveLength(1);
    expect(trips.flatMap((trip) => trip.commands)).toEqual(perCommand.map(() => 'evalsha'));
    for (const trip of trips) {
      const tripKeys = trip.keys.flat();
      expect(tripKeys.map((key) => owner(calculateSlot(key)))).toEqual(tripKeys.map(() => nodeOf(trip)));
    }
  });

  /** A second app on the same tables, with a Redis client and key prefix of its own, torn down after all. */
  async function startOtherApp(client: AnyRedis, keyPrefix: string): Promise<CounterApp> {
    otherClients.push(client);
    otherPrefixes.push(keyPrefix);
    const app = await startCounterApp({
      database: database.options,
      keyPrefix,
      redis: client,
      synchronize: false,
      counter: { shards: SHARDS, flushOnShutdown: false },
      controllers: LIVE_COUNTS_CONTROLLERS,
    });
    others.push(app);
    return app;
  }

  it('answers with the database values when Redis is unreachable', async () => {
    const article = await insertArticle(10, 100, 'down');
    const remark = await remarks().save(remarks().create({ id: `down-${prefix}`, replyCount: 3, article }));
    expect(await counter.counters.increment(Article, article.id, 'like_count', 2)).toBe(12);
    expect(await counter.counters.increment(Remark, remark.id, 'reply_count', 2)).toBe(5);

    const deadPrefix = uniquePrefix('live-http-dead');
    const down = await startOtherApp(unreachableClient(topology), deadPrefix);
    const downHttp = down.app.getHttpServer() as App;

    const started = Date.now();
    const one = await request(downHttp).get(`/live/articles/${article.id}`).expect(200);
    expect(live(one.body as ArticleBody)).toEqual({ id: article.id, likeCount: 10, viewCount: big(100) });
    const page = await request(downHttp).get('/live/page?title=down&page=1&size=10').expect(200);
    expect((page.body.items as ArticleBody[]).map(live)).toEqual([
      { id: article.id, likeCount: 10, viewCount: big(100) },
    ]);
    expect(page.body.total).toBe(1);
    const withRemarks = await request(downHttp).get(`/live/articles/${article.id}/remarks`).expect(200);
    expect((withRemarks.body as ArticleBody).likeCount).toBe(10);
    expect((withRemarks.body as ArticleBody).remarks!.map(({ id, replyCount }) => [id, replyCount])).toEqual([
      [remark.id, 3],
    ]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await redis.exists(rowKey(articleTable(), article.id, deadPrefix))).toBe(0);
  });

  it('falls back to the database values once its Redis client is disconnected mid-test', async () => {
    const article = await insertArticle(20, 200, 'cut');
    const own = moduleClient(topology);
    const ownPrefix = uniquePrefix('live-http-cut');
    const app = await startOtherApp(own, ownPrefix);
    const appHttp = app.app.getHttpServer() as App;

    expect(await app.counters.increment(Article, article.id, 'like_count', 5)).toBe(25);
    const before = await request(appHttp).get(`/live/articles/${article.id}`).expect(200);
    expect(before.body).toEqual({ id: article.id, title: 'cut', likeCount: 25, viewCount: big(200) });

    own.disconnect();
    const started = Date.now();
    const after = await request(appHttp).get(`/live/articles/${article.id}`).expect(200);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(after.body).toEqual({ id: article.id, title: 'cut', likeCount: 20, viewCount: big(200) });
    // The change stays pending in Redis for a later flush; the database was not written behind its back.
    expect(await redis.hget(shardOf(articleTable(), article.id, ownPrefix).pending, `${article.id} like_count`)).toBe(
      '5',
    );
    expect(await storedArticle(article.id)).toEqual({ likeCount: 20, viewCount: 200 });
  });
});

// A counter's JSON type is its column's in the app, whether Redis answers or not: the overlay writes what
// TypeORM hydrates for the column (the driver's type, through the column's transformer), and a NULL as
// the 0 it counts as.
describe.each(DATABASES)('live counts keep the types of their columns on %s', (databaseName) => {
  const prefixes = [uniquePrefix('live-types'), uniquePrefix('live-types-down')];
  const redis = inspectionClient('standalone');
  let database: TestDatabase;
  let up: CounterApp;
  let down: CounterApp;
  const big = (count: number) => bigint(databaseName, count);

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    const app = (keyPrefix: string, options: Partial<Parameters<typeof startCounterApp>[0]>) =>
      startCounterApp({
        database: database.options,
        keyPrefix,
        entities: [Score],
        controllers: [ScoresController],
        counter: { shards: 2, flushOnShutdown: false },
        ...options,
      });
    up = await app(prefixes[0], {});
    down = await app(prefixes[1], { synchronize: false, redis: unreachableClient('standalone') });
  });

  afterAll(async () => {
    await up?.close();
    await down?.close();
    await database?.drop();
    for (const prefix of prefixes) await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  it('answers a route with the same JSON types with Redis up and down', async () => {
    const scores = up.dataSource.getRepository(Score);
    const [changed, untouched] = await scores.save([
      { plainCount: 1, bigCount: 10, convertedCount: 100, maybeCount: 7 },
      { plainCount: 2, bigCount: 20, convertedCount: 200, maybeCount: null },
    ]);
    expect(await up.counters.increment(Score, changed.id, 'plain_count', 1)).toBe(2);
    expect(await up.counters.increment(Score, changed.id, 'big_count', 2)).toBe(12);
    expect(await up.counters.increment(Score, changed.id, 'converted_count', 3)).toBe(103);
    expect(await up.counters.increment(Score, changed.id, 'maybe_count', 4)).toBe(11);
    const path = `/scores?ids=${changed.id},${untouched.id}`;

    const live = await request(up.app.getHttpServer() as App)
      .get(path)
      .expect(200);
    expect(live.body).toEqual([
      { id: changed.id, plainCount: 2, bigCount: big(12), convertedCount: 103, maybeCount: 11 },
      { id: untouched.id, plainCount: 2, bigCount: big(20), convertedCount: 200, maybeCount: 0 },
    ]);
    // get and getMany answer numbers, whatever the column's type.
    expect(await up.counters.getMany(Score, [changed.id])).toEqual(
      new Map([[changed.id, { plain_count: 2, big_count: 12, converted_count: 103, maybe_count: 11 }]]),
    );

    const fallback = await request(down.app.getHttpServer() as App)
      .get(path)
      .expect(200);
    expect(fallback.body).toEqual([
      { id: changed.id, plainCount: 1, bigCount: big(10), convertedCount: 100, maybeCount: 7 },
      { id: untouched.id, plainCount: 2, bigCount: big(20), convertedCount: 200, maybeCount: 0 },
    ]);
  });
});
