import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { RedisServer } from '../../support/redis-server.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { articleCounts, insertArticles } from '../../support/rows.js';

// G1's limit: losing Redis data loses at most the deltas not yet flushed, and never moves a database
// value backwards; reads fall back to the database and increments continue from it.
describe.each(DATABASES)('Redis data loss on %s', (databaseName) => {
  let server: RedisServer;
  let redis: Redis;
  let database: TestDatabase;
  let app: CounterApp;

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url, RESP2);
    database = await createTestDatabase(databaseName);
    app = await startCounterApp({
      database: database.options,
      keyPrefix: uniquePrefix('loss'),
      redis,
      counter: { flushOnShutdown: false, shards: 4 },
    });
  });

  afterEach(() => vi.restoreAllMocks());

  afterAll(async () => {
    await app?.close();
    redis?.disconnect();
    await database?.drop();
    await server?.stop();
  });

  const likes = async (ids: number[]) => {
    const counts = await articleCounts(app.dataSource, ids);
    return ids.map((id) => counts.get(id)!.likes);
  };

  it('loses only unflushed deltas after FLUSHDB, reads and counts on from the database', async () => {
    const ids = await insertArticles(app.dataSource, [100, 200, 300]);
    for (const id of ids) await app.counters.increment(Article, id, 'like_count', 10);
    expect((await app.counters.flush()).error).toBeUndefined();
    const flushed = await likes(ids);
    expect(flushed).toEqual([110, 210, 310]);

    for (const id of ids) await app.counters.increment(Article, id, 'like_count', 3);
    expect(await app.counters.get(Article, ids[0], 'like_count')).toBe(113);
    await redis.flushdb();

    // The three unflushed +3s are gone; nothing else is.
    expect(await app.counters.getMany(Article, ids, ['like_count'])).toEqual(
      new Map(ids.map((id, i) => [id, { like_count: flushed[i] }])),
    );
    expect(await app.counters.increment(Article, ids[1], 'like_count')).toBe(211);
    expect((await app.counters.flush()).error).toBeUndefined();
    expect(await likes(ids)).toEqual([110, 211, 310]);
  });

  it('counts a batch committed just before the loss exactly once', async () => {
    const ids = await insertArticles(app.dataSource, [5, 6]);
    for (const id of ids) await app.counters.increment(Article, id, 'like_count', 4);
    // The flusher commits its batches, then Redis loses everything before any ack arrives.
    const ack = vi.spyOn(app.app.get(FlushStore), 'ack').mockResolvedValue(false);
    expect((await app.counters.flush()).error).toBeUndefined();
    expect(ack).toHaveBeenCalled();
    await redis.flushdb();
    vi.restoreAllMocks();
    expect(await likes(ids)).toEqual([9, 10]);

    expect(await app.counters.get(Article, ids[0], 'like_count')).toBe(9);
    expect(await app.counters.increment(Article, ids[1], 'like_count', 2)).toBe(12);
    expect((await app.counters.flush()).error).toBeUndefined();
    expect(await likes(ids)).toEqual([9, 12]);
  });

  /**
   * An instance of a deployment of its own flushes a change and stops; then Redis loses its data (a
   * restart without persistence) while no instance runs. Returns the deployment's app options.
   */
  async function flushedThenLostWhileDown(label: string) {
    const options = {
      database: database.options,
      keyPrefix: uniquePrefix(label),
      redis,
      synchronize: false,
      counter: { shards: 4 },
    };
    const before = await startCounterApp(options);
    const [id] = await insertArticles(before.dataSource, [0]);
    await before.counters.increment(Article, id, 'like_count', 2);
    expect((await before.counters.flush()).error).toBeUndefined();
    await before.close();
    await redis.flushdb();
    return options;
  }

  it('reports at bootstrap a loss that happened while no instance ran', async () => {
    const options = await flushedThenLostWhileDown('loss-while-down');
    const after = await startCounterApp(options);
    try {
      const loss = (await after.counters.status()).lastRedisDataLoss;
      expect(loss?.entities).toEqual(['Article']);
      expect(loss?.repair).toContain('Article');
    } finally {
      await after.close();
    }
  });

  it('reports a loss found by the first flush of an instance that started while Redis was unreachable', async () => {
    const options = await flushedThenLostWhileDown('loss-unreachable');

    // The next instance starts while Redis cannot be reached, so its bootstrap marks nothing.
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: server.port }, { mode: 'reset' });
    const after = await startCounterApp({ ...options, redis: undefined, counter: { shards: 4, redis: proxy.url } });
    try {
      proxy.setMode('pass');
      let report = await after.counters.flush();
      // 50 × 100 ms: ioredis reconnects to a local Redis within a second.
      for (let attempt = 0; report.error && attempt < 50; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        report = await after.counters.flush();
      }
      expect(report.error).toBeUndefined();
      expect((await after.counters.status()).lastRedisDataLoss?.entities).toEqual(['Article']);
    } finally {
      await after.close();
      await proxy.close();
    }
  });

  it('never moves a database value backwards across repeated losses', async () => {
    const ids = await insertArticles(app.dataSource, [0, 0, 0, 0]);
    let previous = await likes(ids);
    for (let round = 0; round < 5; round++) {
      for (const id of ids) await app.counters.increment(Article, id, 'like_count', 1 + round);
      if (round % 2 === 0) expect((await app.counters.flush()).error).toBeUndefined();
      await redis.flushdb();
      expect((await app.counters.flush()).error).toBeUndefined();
      const now = await likes(ids);
      now.forEach((value, i) => expect(value).toBeGreaterThanOrEqual(previous[i]));
      previous = now;
    }
    // Rounds 0, 2 and 4 were flushed before their loss: 1 + 3 + 5; rounds 1 and 3 were lost.
    expect(previous).toEqual([9, 9, 9, 9]);
  });
});
