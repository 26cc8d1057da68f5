import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCounterApp, type CounterApp } from './support/counter-app.js';
import { createTestDatabase, type TestDatabase } from './support/databases.js';
import { Article } from './support/entities.js';
import { PrivateRedis } from './support/private-redis.js';
import { RedisTraffic } from './support/redis-traffic.js';
import { uniquePrefix } from './support/redis.js';
import { insertArticles } from './support/rows.js';

// Lua scripts are loaded once and then called by SHA: a script's body crosses the wire at most once
// per server, however many calls follow. Redis only, so one database is enough.
describe('script loading', () => {
  const prefix = uniquePrefix('sha');
  let server: PrivateRedis;
  let client: Redis;
  let observer: Redis;
  let database: TestDatabase;
  let counter: CounterApp;

  beforeAll(async () => {
    server = await PrivateRedis.start();
    client = new Redis(server.url, { protocol: 2 });
    observer = new Redis(server.url, { protocol: 2 });
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
    const commands = (await traffic.seen(observer)).map((args) => args[0].toLowerCase());
    traffic.stop();

    const scripts = commands.filter((name) => name === 'eval' || name === 'evalsha');
    const bodies = commands.filter((name) => name === 'eval');
    // increment, read, seed, claim, ack, release: six scripts at most, each sent whole at most once.
    expect(bodies.length).toBeLessThanOrEqual(6);
    expect(scripts.length).toBeGreaterThanOrEqual(60 + 20);
    expect(new Set(commands.filter((name) => !['eval', 'evalsha'].includes(name)))).toEqual(new Set());
  });
});
