import { Logger, ServiceUnavailableException, type INestApplication } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  CounterConfigurationError,
  CounterExceptionFilter,
  CounterHealthIndicator,
  CounterLedgerEntry,
  CounterModule,
  CounterService,
  CounterStoreUnavailableError,
  type CounterModuleOptions,
} from '../../lib/index.js';
import { ArticleLikesController } from '../fixtures/article-likes.controller.js';
import { Article, ArticleBeforeViewCount, ENTITIES } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { NestHarness } from '../support/nest-harness.js';
import { RedisCluster } from '../../support/redis-cluster.js';
import { RedisServer } from '../../support/redis-server.js';
import { uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';

/** Room for the module's keys and scripts above an empty redis-server's own ~1 MB. */
const MAX_MEMORY = '8mb';
/** One filler value: a few of them fill MAX_MEMORY. */
const FILLER_BYTES = 256 * 1024;
/** Filler writes: 64 MB in all, eight times MAX_MEMORY, so volatile-lru evicts every older key with a TTL. */
const FILLERS = 256;
/** Past the time ioredis takes to reconnect (its default backoff reaches 2 s) plus the check. */
const RECONNECT_MS = 10_000;

/** Another app's data: big values with a TTL, written until Redis has evicted keys to make room. */
async function fillWithVolatileKeys(server: RedisServer): Promise<void> {
  const client = new Redis(server.url);
  try {
    const value = 'x'.repeat(FILLER_BYTES);
    for (let i = 0; i < FILLERS; i++) await client.set(`other-app:${i}`, value, 'EX', 3600);
    const stats = await client.info('stats');
    expect(Number(/^evicted_keys:(\d+)/m.exec(stats)?.[1])).toBeGreaterThan(0);
  } finally {
    client.disconnect();
  }
}

/** Another app's data, without a TTL, written until Redis (noeviction) refuses writes: it is full. */
async function fillUntilFull(server: RedisServer): Promise<string[]> {
  const client = new Redis(server.url);
  const keys: string[] = [];
  try {
    const value = 'x'.repeat(FILLER_BYTES);
    for (;;) {
      const key = `other-app:${keys.length}`;
      try {
        await client.set(key, value);
      } catch (error) {
        expect((error as Error).message).toMatch(/^OOM command not allowed/);
        return keys;
      }
      keys.push(key);
    }
  } finally {
    client.disconnect();
  }
}

const unsafePolicy = (server: { port: number }, policy: string) =>
  `Redis can evict the keys that hold unflushed counter changes: maxmemory-policy is ${policy} on ` +
  `127.0.0.1:${server.port}. Set maxmemory-policy noeviction (or a volatile-* policy: the module puts a TTL ` +
  `only on keys it can lose safely), or accept losing changes to eviction with the CounterModule option ` +
  `acceptLossOnEviction: true.`;

// G1, G8 under memory pressure: a Redis that evicts keys with a TTL (volatile-*) never evicts a key
// whose loss would lose a change or a remembered idempotency key.
describe('a Redis that evicts keys with a TTL (volatile-lru)', () => {
  let server: RedisServer;
  let database: TestDatabase;
  const apps: CounterApp[] = [];
  const start = (options: {
    keyPrefix: string;
    shards: number;
    entities?: Array<new () => unknown>;
    synchronize?: boolean;
  }) =>
    startCounterApp({
      database: database.options,
      keyPrefix: options.keyPrefix,
      synchronize: options.synchronize ?? true,
      entities: options.entities,
      counter: { redis: server.url, shards: options.shards, flushOnShutdown: false },
    }).then((app) => (apps.push(app), app));

  beforeAll(async () => {
    server = await RedisServer.start({ args: ['--maxmemory', MAX_MEMORY, '--maxmemory-policy', 'volatile-lru'] });
    database = await createTestDatabase(DATABASES[0]);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await database?.drop();
    await server?.stop();
  });

  it('applies keyed changes once when their retries come after Redis evicted keys', async () => {
    const app = await start({ keyPrefix: uniquePrefix('evict'), shards: 8 });
    const ids = await insertArticles(app.dataSource, [10, 20, 30, 40, 50]);
    const change = (id: number) => app.counters.change(Article, id, 'like_count', 5, { idempotencyKey: `like-${id}` });
    expect(await Promise.all(ids.map(change))).toEqual([15, 25, 35, 45, 55].map((value) => ({ value, applied: true })));

    await fillWithVolatileKeys(server);

    // The retries find their keys, the rows' caches evicted or not.
    expect(await Promise.all(ids.map(change))).toEqual(
      [15, 25, 35, 45, 55].map((value) => ({ value, applied: false })),
    );
    expect((await app.counters.flush()).error).toBeUndefined();
    expect(await articleCounts(app.dataSource, ids)).toEqual(
      new Map(ids.map((id, i) => [id, { likes: 15 + 10 * i, views: 0 }])),
    );
  });

  it('keeps the changes an older instance gave back during a rolling deploy', async () => {
    // Two instances of one deployment (one key prefix), the older one from before view_count was counted.
    const keyPrefix = uniquePrefix('evict-deploy');
    const newer = await start({ keyPrefix, shards: 1 });
    const older = await start({ keyPrefix, shards: 1, entities: [ArticleBeforeViewCount], synchronize: false });
    const [id] = await insertArticles(newer.dataSource, [10]);
    expect(await newer.counters.increment(Article, id, 'view_count', 4)).toBe(4);
    expect(await newer.counters.increment(Article, id, 'like_count', 1)).toBe(11);
    expect((await older.counters.flush()).error).toBeUndefined();
    expect(await articleCounts(newer.dataSource, [id])).toEqual(new Map([[id, { likes: 11, views: 0 }]]));

    await fillWithVolatileKeys(server);

    expect(await newer.counters.getMany(Article, [id])).toEqual(new Map([[id, { like_count: 11, view_count: 4 }]]));
    expect(await newer.counters.increment(Article, id, 'like_count', 1)).toBe(12);
    expect((await newer.counters.flush()).error).toBeUndefined();
    expect(await articleCounts(newer.dataSource, [id])).toEqual(new Map([[id, { likes: 12, views: 4 }]]));
  });
});

// A policy that may evict keys without a TTL (pending changes, generations) is refused unless the app
// accepts losing changes by name; read from INFO, at bootstrap, at a later first connection and in health.
describe('a Redis whose policy may evict any key (allkeys-*)', () => {
  const harness = new NestHarness();
  const servers: RedisServer[] = [];
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase(DATABASES[0]);
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    await harness.closeAll();
    await database?.drop();
    for (const server of servers) await server.stop();
  });

  const privateRedis = async (args: string[]) => {
    const server = await RedisServer.start({ args: args });
    servers.push(server);
    return server;
  };
  const start = (redis: CounterModuleOptions['redis'], acceptLossOnEviction?: boolean) =>
    harness.start({
      database: database.options,
      entities: [...ENTITIES, CounterLedgerEntry],
      imports: [
        CounterModule.forRoot({
          redis,
          keyPrefix: uniquePrefix('evict-policy'),
          shards: 8,
          flushEnabled: false,
          flushOnShutdown: false,
          ...(acceptLossOnEviction === undefined ? {} : { acceptLossOnEviction }),
        }),
        TerminusModule.forRoot({ logger: false }),
      ],
    });
  const health = async (app: INestApplication) => {
    const indicator = app.get(CounterHealthIndicator);
    try {
      return await app.get(HealthCheckService).check([() => indicator.isHealthy('counters')]);
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      return error.getResponse();
    }
  };

  it('refuses to start under allkeys-lru, naming the policy and the fix', async () => {
    const server = await privateRedis(['--maxmemory-policy', 'allkeys-lru']);
    const started = start(server.url);
    await expect(started).rejects.toBeInstanceOf(CounterConfigurationError);
    await expect(started).rejects.toThrow(unsafePolicy(server, 'allkeys-lru'));
  });

  it('refuses a Redis Cluster whose master evicts any key, read from every master', async () => {
    const cluster = await RedisCluster.start();
    try {
      const master = new Redis(cluster.master.port, '127.0.0.1');
      await master.config('SET', 'maxmemory-policy', 'allkeys-lru');
      master.disconnect();
      const started = start({ clusterNodes: cluster.nodes });
      await expect(started).rejects.toBeInstanceOf(CounterConfigurationError);
      await expect(started).rejects.toThrow(unsafePolicy({ port: cluster.master.port }, 'allkeys-lru'));
    } finally {
      await cluster.stop();
    }
  });

  it('starts under allkeys-lfu with acceptLossOnEviction: true, and is healthy', async () => {
    const server = await privateRedis(['--maxmemory-policy', 'allkeys-lfu']);
    const app = await start(server.url, true);
    const [id] = await insertArticles(dataSourceOf(app), [2]);
    expect(await app.get(CounterService).increment(Article, id, 'like_count')).toBe(3);
    expect(await health(app)).toMatchObject({ status: 'ok', info: { counters: { status: 'up' } } });
  });

  it('refuses an acceptLossOnEviction that is not a boolean', async () => {
    const server = await privateRedis(['--maxmemory-policy', 'noeviction']);
    const started = start(server.url, 'yes' as unknown as boolean);
    await expect(started).rejects.toBeInstanceOf(CounterConfigurationError);
    await expect(started).rejects.toThrow(
      'CounterModule option "acceptLossOnEviction" must be true or false; got yes.',
    );
  });

  it('starts under noeviction and volatile-ttl', async () => {
    for (const policy of ['noeviction', 'volatile-ttl']) {
      const server = await privateRedis(['--maxmemory-policy', policy]);
      const app = await start(server.url);
      expect(await health(app)).toMatchObject({ status: 'ok', info: { counters: { status: 'up' } } });
    }
  });

  it('reports down in health once the policy is changed to allkeys-random at runtime', async () => {
    const server = await privateRedis(['--maxmemory-policy', 'noeviction']);
    const app = await start(server.url);
    const admin = new Redis(server.url);
    await admin.config('SET', 'maxmemory-policy', 'allkeys-random');
    admin.disconnect();
    expect(await health(app)).toMatchObject({
      status: 'error',
      error: { counters: { status: 'down', message: unsafePolicy(server, 'allkeys-random'), redisAvailable: true } },
    });
  });

  it('logs the unsafe policy as an error when Redis first becomes reachable after a degraded start', async () => {
    const server = await privateRedis(['--maxmemory-policy', 'allkeys-lru']);
    await server.stop();
    const errors = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    // Redis unreachable: the app starts degraded, as before.
    await start(server.url);
    await server.restart();
    await expect
      .poll(() => errors.mock.calls.map(([message]) => String(message)), { timeout: RECONNECT_MS, interval: 100 })
      .toContainEqual(expect.stringContaining(unsafePolicy(server, 'allkeys-lru')));
  });
});

// A Redis full under noeviction refuses writes with OOM: an outage to the caller (503), never a raw
// ReplyError. Redis refuses a script at its first write, so the refused change applied nothing.
describe('a Redis that is full (noeviction)', () => {
  const harness = new NestHarness();
  let server: RedisServer;
  let database: TestDatabase;

  beforeAll(async () => {
    server = await RedisServer.start({ args: ['--maxmemory', MAX_MEMORY, '--maxmemory-policy', 'noeviction'] });
    database = await createTestDatabase(DATABASES[0]);
  });
  afterAll(async () => {
    await harness.closeAll();
    await database?.drop();
    await server?.stop();
  });

  it('refuses changes with CounterStoreUnavailableError (HTTP 503), applying nothing', async () => {
    const app = await harness.start({
      database: database.options,
      entities: [...ENTITIES, CounterLedgerEntry],
      imports: [
        CounterModule.forRoot({
          redis: server.url,
          keyPrefix: uniquePrefix('oom'),
          shards: 8,
          flushEnabled: false,
          flushOnShutdown: false,
        }),
      ],
      controllers: [ArticleLikesController],
      providers: [{ provide: APP_FILTER, useClass: CounterExceptionFilter }],
    });
    const counters = app.get(CounterService);
    const ids = await insertArticles(dataSourceOf(app), [1, 2]);
    // Loaded before Redis is full: a read of a loaded row writes nothing.
    expect(await counters.change(Article, ids[0], 'like_count', 1, { idempotencyKey: 'before' })).toEqual({
      value: 2,
      applied: true,
    });
    expect(await counters.increment(Article, ids[1], 'like_count')).toBe(3);

    const fillers = await fillUntilFull(server);
    // The filler's own buffers, freed when it disconnects, would make room again: keep Redis over its limit.
    const admin = new Redis(server.url);
    const used = Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))?.[1]);
    await admin.config('SET', 'maxmemory', String(used - FILLER_BYTES));

    const refusal =
      /^Redis is out of memory and refused the command \(OOM command not allowed .*\); nothing was applied\./;
    for (const attempt of [
      counters.increment(Article, ids[0], 'like_count'),
      counters.change(Article, ids[1], 'like_count', 1, { idempotencyKey: 'full' }),
    ]) {
      await expect(attempt).rejects.toBeInstanceOf(CounterStoreUnavailableError);
      await expect(attempt).rejects.toThrow(refusal);
    }
    // Several changes of one turn in one script call: each refused the same way.
    const batched = await Promise.allSettled([
      counters.increment(Article, ids[0], 'like_count'),
      counters.increment(Article, ids[1], 'like_count'),
      counters.decrement(Article, ids[1], 'like_count'),
    ]);
    for (const outcome of batched) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(CounterStoreUnavailableError);
    }
    const response = await request(app.getHttpServer()).post(`/articles/${ids[0]}/like`);
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      code: 'CounterStoreUnavailableError',
      message: 'Counters are unavailable for a moment (Redis or the database cannot be reached); retry later.',
    });
    // Reads of loaded rows still answer, and show that nothing refused was applied.
    expect(await counters.getMany(Article, ids)).toEqual(
      new Map([
        [ids[0], { like_count: 2, view_count: 0 }],
        [ids[1], { like_count: 3, view_count: 0 }],
      ]),
    );

    // The flush still runs on a full Redis (it writes what waits and frees its batches): the changes made
    // before Redis filled up reach the database.
    const full = await counters.flush();
    expect([full.error?.message, full.batches > 0, full.rows]).toEqual([undefined, true, 2]);
    expect(await articleCounts(dataSourceOf(app), ids)).toEqual(
      new Map([
        [ids[0], { likes: 2, views: 0 }],
        [ids[1], { likes: 3, views: 0 }],
      ]),
    );

    await admin.config('SET', 'maxmemory', MAX_MEMORY);
    await admin.del(...fillers);
    admin.disconnect();
    expect(await counters.change(Article, ids[1], 'like_count', 1, { idempotencyKey: 'full' })).toEqual({
      value: 4,
      applied: true,
    });
    expect((await counters.flush()).error).toBeUndefined();
    expect(await articleCounts(dataSourceOf(app), ids)).toEqual(
      new Map([
        [ids[0], { likes: 2, views: 0 }],
        [ids[1], { likes: 4, views: 0 }],
      ]),
    );
  });
});

const dataSourceOf = (app: INestApplication) => app.get(DataSource);
