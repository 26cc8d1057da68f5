import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterOutOfRangeError } from '../../lib/index.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { RedisServer } from '../../support/redis-server.js';
import { RedisTraffic } from '../support/redis-traffic.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';

/** The names of the commands `traffic` has seen, lower case. */
const commandNames = async (traffic: RedisTraffic, via: Redis) =>
  (await traffic.seen(via)).map((args) => args[0].toLowerCase());

// Lua scripts are loaded once and then called by SHA: a script's body crosses the wire at most once
// per server, however many calls follow. Redis only, so one database is enough.
describe('script loading', () => {
  const prefix = uniquePrefix('sha');
  let server: RedisServer;
  let client: Redis;
  let observer: Redis;
  let database: TestDatabase;
  let counter: CounterApp;

  beforeAll(async () => {
    server = await RedisServer.start();
    client = new Redis(server.url, RESP2);
    observer = new Redis(server.url, RESP2);
    database = await createTestDatabase('sqlite');
    counter = await startCounterApp({ database: database.options, keyPrefix: prefix, redis: client });
  });

  afterAll(async () => {
    await counter?.close();
    client?.disconnect();
    observer?.disconnect();
    await database?.drop();
    await server?.stop();
  });

  it('sends each script body at most once, then only EVALSHA', async () => {
    const ids = await insertArticles(counter.dataSource, [0, 0, 0]);
    const traffic = await RedisTraffic.start(observer, prefix);
    for (let round = 0; round < 20; round++) {
      for (const id of ids) await counter.counters.increment(Article, id, 'like_count');
      await counter.counters.getMany(Article, ids);
      if (round % 5 === 0) expect((await counter.counters.flush()).error).toBeUndefined();
    }
    const commands = await commandNames(traffic, observer);
    traffic.stop();

    const scripts = commands.filter((name) => name === 'eval' || name === 'evalsha');
    const bodies = commands.filter((name) => name === 'eval');
    // increment, read, seed, claim, ack, release: six scripts at most, each sent whole at most once.
    expect(bodies.length).toBeLessThanOrEqual(6);
    expect(scripts.length).toBeGreaterThanOrEqual(60 + 20);
    expect(new Set(commands.filter((name) => !['eval', 'evalsha'].includes(name)))).toEqual(new Set());
  });

  // Redis can forget its scripts while a connection stays open (SCRIPT FLUSH). A call by SHA is then
  // refused with NOSCRIPT without running, and must be sent again with its body: applied once, not twice.
  it('after Redis lost its scripts, applies each change once and sends the body again', async () => {
    const [id] = await insertArticles(counter.dataSource, [5], 7);
    const batch = (likes: number, views: number) =>
      Promise.all([
        counter.counters.increment(Article, id, 'like_count', likes),
        counter.counters.increment(Article, id, 'view_count', views),
        counter.counters.increment(Article, id, 'like_count', 1),
      ]);
    // The increment script sent once on this connection, so that it calls it by SHA from now on.
    expect(await counter.counters.increment(Article, id, 'like_count', 1)).toBe(6);
    expect(await batch(1, 1)).toEqual([7, 8, 8]);
    await observer.script('FLUSH');
    const traffic = await RedisTraffic.start(observer, prefix);

    // Lone changes, with bounds (like_count, min 0) and without (view_count), and one refused.
    expect(await counter.counters.increment(Article, id, 'like_count', 2)).toBe(10);
    expect(await counter.counters.increment(Article, id, 'view_count', 4)).toBe(12);
    await expect(counter.counters.increment(Article, id, 'like_count', -11)).rejects.toBeInstanceOf(
      CounterOutOfRangeError,
    );
    expect(await commandNames(traffic, observer)).toEqual(['evalsha', 'eval', 'evalsha', 'evalsha']);

    // Changes of one turn, sent together in one call, by SHA: the body is back on the server.
    await traffic.reset(observer);
    expect(await batch(1, 1)).toEqual([11, 13, 12]);
    expect(await commandNames(traffic, observer)).toEqual(['evalsha']);
    traffic.stop();

    expect((await counter.counters.getMany(Article, [id])).get(id)).toEqual({ like_count: 12, view_count: 13 });
    expect((await counter.counters.flush()).error).toBeUndefined();
    expect((await articleCounts(counter.dataSource, [id])).get(id)).toEqual({ likes: 12, views: 13 });
  });
});
