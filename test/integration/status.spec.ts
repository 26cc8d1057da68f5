import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { RedisServer } from '../../support/redis-server.js';
import { uniquePrefix } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { insertArticles } from '../../support/rows.js';

const SHARDS = 4;
/** Article, Remark and Badge: every shard of each is marked and watched. */
const ALL_SHARDS = 3 * SHARDS;

/** The backlog and flush history `CounterService.status()` reports, and the detection of Redis data loss. */
describe.each(DATABASES)('status and Redis data loss on %s', (databaseName) => {
  let server: RedisServer;
  let database: TestDatabase;
  const apps: CounterApp[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    database = await createTestDatabase(databaseName);
  });

  afterEach(() => vi.restoreAllMocks());

  afterAll(async () => {
    for (const app of apps) await app.close();
    await database?.drop();
    await server?.stop();
  });

  /** An app whose module owns a fail-fast client of the private Redis. */
  async function start(prefix: string): Promise<CounterApp> {
    const app = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      synchronize: apps.length === 0,
      counter: { redis: server.url, shards: SHARDS, flushOnShutdown: false, flushLeaseMs: 200 },
    });
    apps.push(app);
    return app;
  }

  const articleTable = (app: CounterApp) => app.dataSource.getMetadata(Article).tablePath;

  it('reports the rows waiting, the claimed batches and the age of the oldest change', async () => {
    const app = await start(uniquePrefix('status'));
    expect(await app.counters.status()).toEqual({
      redisAvailable: true,
      pendingRows: 0,
      inFlightBatches: 0,
      oldestPendingAgeMs: null,
      lastSuccessfulFlushAt: null,
      lastFailedFlushAt: null,
      lastFlushError: null,
      consecutiveFailedFlushes: 0,
      lastRedisDataLoss: null,
    });

    const ids = await insertArticles(app.dataSource, [1, 2, 3, 4, 5]);
    for (const id of ids) await app.counters.increment(Article, id, 'like_count');
    await app.counters.increment(Article, ids[0], 'view_count');
    await new Promise((resolve) => setTimeout(resolve, 250));
    const waiting = await app.counters.status();
    expect(waiting.pendingRows).toBe(5);
    expect(waiting.inFlightBatches).toBe(0);
    expect(waiting.oldestPendingAgeMs).toBeGreaterThanOrEqual(250);

    // A flush that claims its batches and fails to write them: the rows wait in claimed batches.
    vi.spyOn(app.app.get(CounterDatabase), 'applyBatches').mockRejectedValue(new Error('database gone'));
    const failed = await app.counters.flush();
    expect(failed.error?.message).toBe('database gone');
    const claimed = await app.counters.status();
    expect(failed.failedShards).toBeGreaterThan(0);
    expect(claimed).toMatchObject({
      pendingRows: 5,
      inFlightBatches: failed.failedShards,
      lastSuccessfulFlushAt: null,
      lastFlushError: 'unknown',
      consecutiveFailedFlushes: 1,
    });
    expect(claimed.oldestPendingAgeMs).toBeGreaterThanOrEqual(waiting.oldestPendingAgeMs!);
    expect(claimed.lastFailedFlushAt).toBeInstanceOf(Date);

    vi.restoreAllMocks();
    // Another flusher may take the shards once the failed flush's leases are released (they are).
    const report = await app.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report.rows).toBe(5);
    const done = await app.counters.status();
    expect(done).toMatchObject({
      pendingRows: 0,
      inFlightBatches: 0,
      oldestPendingAgeMs: null,
      consecutiveFailedFlushes: 0,
    });
    expect(done.lastSuccessfulFlushAt!.getTime()).toBeGreaterThanOrEqual(claimed.lastFailedFlushAt!.getTime());
    expect(done.lastFlushError).toBe('unknown');
  });

  it('reports a flush that failed on a constraint by its reason, never the constraint or table it names', async () => {
    const app = await start(uniquePrefix('status-constraint'));
    const [id] = await insertArticles(app.dataSource, [0]);
    const table = articleTable(app);
    const constraint = `secret_cap_${id}`;
    const dropConstraint = await refuseLikesAbove(app, table, constraint, id, 2);
    try {
      for (let i = 0; i < 3; i++) await app.counters.increment(Article, id, 'like_count');
      const failed = await app.counters.flush();
      // The caller of flush() gets the database's own error; status() only what kind of failure it was.
      expect(failed.error?.message).toContain(constraint);
      const status = await app.counters.status();
      expect(status).toMatchObject({
        lastFailedFlushAt: expect.any(Date),
        lastFlushError: 'constraint-violation',
        consecutiveFailedFlushes: 1,
      });
      const shown = JSON.stringify(status);
      expect(shown).not.toContain(constraint);
      expect(shown).not.toContain('test_article');
    } finally {
      await dropConstraint();
    }
    expect((await app.counters.flush()).rows).toBe(1);
    expect((await app.counters.status()).lastFlushError).toBe('constraint-violation');
  });

  // SQLite is a file: it has no connection to lose.
  if (databaseName !== 'sqlite') {
    it('reports a flush that lost its database as database-unavailable', async () => {
      const { host, port } = database.options as { host: string; port: number };
      const proxy = await TcpProxy.start({ host, port });
      try {
        const app = await startCounterApp({
          database: { ...database.options, host: '127.0.0.1', port: proxy.port } as typeof database.options,
          keyPrefix: uniquePrefix('status-down'),
          synchronize: apps.length === 0,
          counter: { redis: server.url, shards: SHARDS, flushOnShutdown: false, databaseTimeoutMs: 1_000 },
        });
        apps.push(app);
        const [id] = await insertArticles(app.dataSource, [0]);
        await app.counters.increment(Article, id, 'like_count');
        // The pool's connections reset, new ones refused: ECONNRESET from the driver.
        proxy.setMode('reset');
        const failed = await app.counters.flush();
        expect(failed.error).toBeInstanceOf(Error);
        expect(await app.counters.status()).toMatchObject({ lastFlushError: 'database-unavailable' });
        proxy.setMode('pass');
      } finally {
        await proxy.close();
      }
    });
  }

  it('answers with Redis down, without the backlog', async () => {
    const app = await start(uniquePrefix('status-down'));
    await server.stop();
    try {
      expect(await app.counters.status()).toMatchObject({
        redisAvailable: false,
        pendingRows: null,
        inFlightBatches: null,
        oldestPendingAgeMs: null,
      });
    } finally {
      await server.restart();
    }
  });

  it('reports a loss of Redis data once, with the last flush before it', async () => {
    const prefix = uniquePrefix('lost');
    const app = await start(prefix);
    const ids = await insertArticles(app.dataSource, [10, 20]);
    for (const id of ids) await app.counters.increment(Article, id, 'like_count');
    expect((await app.counters.flush()).error).toBeUndefined();
    const flushedAt = (await app.counters.status()).lastSuccessfulFlushAt;
    expect(flushedAt).toBeInstanceOf(Date);

    const errors = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const redis = new Redis(server.url);
    await redis.flushdb();
    redis.disconnect();
    expect((await app.counters.flush()).error).toBeUndefined();
    const { lastRedisDataLoss } = await app.counters.status();
    expect(lastRedisDataLoss).toEqual({
      detectedAt: expect.any(Date),
      shards: ALL_SHARDS,
      entities: ['Article', 'Badge', 'Remark'],
      repair:
        'No counter of theirs declares a source to recount. What Article.like_count, Article.view_count, ' +
        'Badge.award_count, Remark.reply_count lost cannot be recovered: they declare no source.',
      lastSuccessfulFlushAt: flushedAt,
    });
    expect(errors.mock.calls.filter(([message]) => String(message).startsWith('Redis lost the counter data'))).toEqual([
      [expect.stringContaining(`of ${ALL_SHARDS} shard(s)`)],
    ]);

    // The shards are marked again: the next flush reports nothing new.
    expect((await app.counters.flush()).error).toBeUndefined();
    expect((await app.counters.status()).lastRedisDataLoss).toEqual(lastRedisDataLoss);
  });

  it('sees a loss even when a new instance marked the shards first: their generation went backwards', async () => {
    const prefix = uniquePrefix('lost-again');
    const running = await start(prefix);
    const ids = await insertArticles(running.dataSource, [1, 2, 3, 4, 5, 6, 7, 8]);
    for (const id of ids) await running.counters.increment(Article, id, 'like_count');
    expect((await running.counters.flush()).error).toBeUndefined();
    // Each acknowledged batch moved its shard's generation to 1.
    const keys = new CounterKeys(prefix, SHARDS);
    const acknowledgedShards = new Set(ids.map((id) => keys.shardOf(String(id)))).size;

    vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const redis = new Redis(server.url);
    await redis.flushdb();
    redis.disconnect();
    const newcomer = await start(prefix);
    expect(await redisKeyCount(prefix)).toBe(ALL_SHARDS);
    expect((await running.counters.flush()).error).toBeUndefined();
    expect((await running.counters.status()).lastRedisDataLoss?.shards).toBe(acknowledgedShards);
    // The newcomer never saw the data before the loss, but its bootstrap made the keys again of shards
    // the ledger shows flushed: it reports the loss too.
    expect((await newcomer.counters.flush()).error).toBeUndefined();
    const seenByNewcomer = (await newcomer.counters.status()).lastRedisDataLoss;
    expect([seenByNewcomer?.shards, seenByNewcomer?.entities]).toEqual([acknowledgedShards, ['Article']]);
    expect(articleTable(running)).toBe(articleTable(newcomer));
  });

  it('raises no alarm when flushes of one instance overlap under load', async () => {
    const app = await start(uniquePrefix('overlap'));
    const ids = await insertArticles(
      app.dataSource,
      Array.from({ length: 16 }, () => 0),
    );
    const until = Date.now() + 3_000;
    let increments = 0;
    const load = async () => {
      while (Date.now() < until) {
        await app.counters.increment(Article, ids[increments++ % ids.length], 'like_count');
      }
    };
    // A scheduled flush and manual ones can run at the same time in one instance: their replies and
    // acks interleave, and an older generation read by one must not look like a loss to the other.
    const flushes = async () => {
      while (Date.now() < until) {
        const reports = await Promise.all([app.counters.flush(), app.counters.flush(), app.counters.flush()]);
        for (const report of reports) expect(report.error).toBeUndefined();
      }
    };
    await Promise.all([load(), load(), load(), flushes()]);
    expect((await app.counters.flush()).error).toBeUndefined();
    expect((await app.counters.status()).lastRedisDataLoss).toBeNull();
    expect(increments).toBeGreaterThan(100);
    const stored = await app.dataSource.getRepository(Article).findBy(ids.map((id) => ({ id })));
    expect(stored.reduce((sum, row) => sum + Number(row.likeCount), 0)).toBe(increments);
  });

  it('raises no alarm on a first start, even when Redis was down at bootstrap', async () => {
    const prefix = uniquePrefix('fresh');
    await server.stop();
    const app = await start(prefix).finally(() => server.restart());
    const ids = await insertArticles(app.dataSource, [3]);
    await expectEventually(async () => app.counters.increment(Article, ids[0], 'like_count').catch(() => 0), 4);
    expect((await app.counters.flush()).error).toBeUndefined();
    expect((await app.counters.status()).lastRedisDataLoss).toBeNull();
    // A generation key per shard, the row, and the pending hash the claim left (see pending-hash.spec).
    expect(await redisKeyCount(prefix)).toBe(ALL_SHARDS + 2);
  });

  /**
   * Makes the database refuse a like_count above `max` on row `id`, with a message naming `name` and the
   * table (a CHECK constraint; on SQLite, which cannot add one to a table, a trigger); returns its undoing.
   */
  async function refuseLikesAbove(app: CounterApp, table: string, name: string, id: number, max: number) {
    const { dataSource } = app;
    if (databaseName === 'sqlite') {
      await dataSource.query(
        `CREATE TRIGGER ${name} BEFORE UPDATE OF like_count ON ${table} WHEN NEW.id = ${id} AND ` +
          `NEW.like_count > ${max} BEGIN SELECT RAISE(ABORT, '${name} failed for ${table}'); END`,
      );
      return async () => void (await dataSource.query(`DROP TRIGGER ${name}`));
    }
    // MariaDB's CHECK cannot name an AUTO_INCREMENT column: the row is told by its title instead.
    await dataSource.query(`UPDATE ${table} SET title = '${name}' WHERE id = ${id}`);
    await dataSource.query(
      `ALTER TABLE ${table} ADD CONSTRAINT ${name} CHECK (title <> '${name}' OR like_count <= ${max})`,
    );
    return async () => void (await dataSource.query(`ALTER TABLE ${table} DROP CONSTRAINT ${name}`));
  }

  async function redisKeyCount(prefix: string): Promise<number> {
    const redis = new Redis(server.url);
    const keys = await redis.keys(`${prefix}:*`);
    redis.disconnect();
    return keys.length;
  }
});

async function expectEventually<T>(probe: () => Promise<T>, expected: T, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = await probe();
  while (last !== expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await probe();
  }
  expect(last).toBe(expected);
}
