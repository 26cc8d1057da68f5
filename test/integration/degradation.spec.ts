import { createRequire } from 'node:module';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  CounterDatabaseUnavailableError,
  CounterStoreUnavailableError,
  type CounterModuleOptions,
  type FlushReport,
} from '../../lib/index.js';
import { CounterFlushScheduler } from '../../lib/flush/counter-flush.scheduler.js';
import { CounterFlusher } from '../../lib/flush/counter.flusher.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { useFaultSuite } from '../support/fault-suite.js';
import { openObserver } from '../../support/observer.js';
import { RedisServer } from '../../support/redis-server.js';
import { deleteKeys, scanKeys, testRedis, uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles, spreadIds } from '../../support/rows.js';
import { TcpProxy } from '../../support/tcp-proxy.js';

/** Only a hang takes this long: the module's Redis commands time out after REDIS_TIMEOUT_MS. */
const HANG_MS = 3_000;
const REDIS_TIMEOUT_MS = 500;
const RECOVERY_MS = 10_000;
const FLUSH_INTERVAL_MS = 100;
const FLUSH_MAX_BACKOFF_MS = 400;

const require = createRequire(import.meta.url);
const Sqlite = require('better-sqlite3') as new (file: string) => { exec(sql: string): void; close(): void };

/** Settles as `promise` does, or rejects if it has not settled within `ms`: a hang, not a slow answer. */
async function settles<T>(promise: Promise<T>, ms = HANG_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${ms} ms: it hangs`)), ms);
  });
  try {
    return await Promise.race([promise, hang]);
  } finally {
    clearTimeout(timer);
  }
}

/** Calls `attempt` until it resolves; past the deadline, rethrows its last error. */
async function eventually<T>(attempt: () => Promise<T>, timeoutMs = RECOVERY_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** A flush that met no error, or the error it met. */
async function cleanFlush(app: CounterApp): Promise<FlushReport> {
  const report = await app.counters.flush();
  if (report.error) throw report.error;
  return report;
}

/**
 * Makes the database unreachable for one app and back: a proxy that resets every connection
 * (PostgreSQL, MariaDB), or an exclusive lock held by another connection (SQLite, whose "server" is a file).
 */
interface DatabaseOutage {
  /** What the app connects with: small pool, fast connect timeouts. */
  options: DataSourceOptions;
  begin(): void;
  end(): void;
  close(): Promise<void>;
}

async function databaseOutage(database: TestDatabase): Promise<DatabaseOutage> {
  const options = database.options as DataSourceOptions & { host?: string; port?: number; database?: string };
  if (database.name === 'sqlite') {
    let lock: { exec(sql: string): void; close(): void } | undefined;
    const end = () => {
      lock?.exec('ROLLBACK');
      lock?.close();
      lock = undefined;
    };
    return {
      options: { ...options, timeout: 200 } as DataSourceOptions,
      begin: () => {
        lock = new Sqlite(options.database!);
        lock.exec('BEGIN EXCLUSIVE');
      },
      end,
      close: async () => end(),
    };
  }
  const proxy = await TcpProxy.start({ host: options.host!, port: options.port! });
  const timeouts = database.name === 'postgres' ? { connectTimeoutMS: 1_000 } : { connectTimeout: 1_000 };
  return {
    options: { ...options, host: proxy.host, port: proxy.port, poolSize: 2, ...timeouts } as DataSourceOptions,
    begin: () => proxy.setMode('reset'),
    end: () => proxy.setMode('pass'),
    close: () => proxy.close(),
  };
}

// G7: Redis down → increments fail fast with a typed error and write nothing to the database; reads fall
// back to the database. Database down → flushes fail and retry with backoff, nothing is lost, and the app
// keeps counting and reading from Redis.
describe.each(DATABASES)('degradation on %s', (databaseName) => {
  const suite = useFaultSuite(databaseName);
  const { redis, prefixes, teardown } = suite;
  let database: TestDatabase;
  let observer: DataSource;
  beforeAll(() => void ({ database, observer } = suite));

  async function startApp(connection: DataSourceOptions, counter: CounterModuleOptions) {
    const keyPrefix = uniquePrefix('degrade');
    prefixes.push(keyPrefix);
    const app = await startCounterApp({
      database: connection,
      keyPrefix,
      synchronize: false,
      counter: { flushOnShutdown: false, redisCommandTimeoutMs: REDIS_TIMEOUT_MS, ...counter },
    });
    teardown.push(() => app.close());
    return Object.assign(app, { keyPrefix });
  }

  async function databaseLikes(ids: number[]): Promise<number[]> {
    const counts = await articleCounts(observer, ids);
    return ids.map((id) => counts.get(id)!.likes);
  }

  async function databaseViews(ids: number[]): Promise<number[]> {
    const counts = await articleCounts(observer, ids);
    return ids.map((id) => counts.get(id)!.views);
  }

  const likesOf = (values: Map<number, Record<string, number>>, ids: number[]) =>
    ids.map((id) => values.get(id)?.like_count);

  it('fails increments fast while Redis is down, reads the database, and recovers when Redis is back', async () => {
    const server = await RedisServer.start();
    let serverRunning = true;
    teardown.push(() => serverRunning && server.stop());
    const app = await startApp(database.options, { redis: server.url });
    const ids = await insertArticles(observer, [10, 20, 30]);
    await app.counters.increment(Article, ids[0], 'like_count', 5);
    await app.counters.increment(Article, ids[1], 'like_count', 7);
    await app.counters.increment(Article, ids[2], 'view_count', 4);
    await cleanFlush(app);
    expect(await databaseLikes(ids)).toEqual([15, 27, 30]);

    await server.stop();
    serverRunning = false;

    for (const change of [
      () => app.counters.increment(Article, ids[0], 'like_count', 1),
      () => app.counters.decrement(Article, ids[1], 'like_count', 2),
      () => app.counters.increment(Article, ids[2], 'view_count'),
      () => app.counters.increment(Article, ids[0], 'like_count', 3),
    ]) {
      await expect(settles(change())).rejects.toBeInstanceOf(CounterStoreUnavailableError);
    }
    expect(await databaseLikes(ids)).toEqual([15, 27, 30]);
    expect(await databaseViews(ids)).toEqual([0, 0, 4]);

    expect(await settles(app.counters.get(Article, ids[0], 'like_count'))).toBe(15);
    expect(await settles(app.counters.get(Article, ids[2], 'view_count'))).toBe(4);
    expect(await settles(app.counters.getMany(Article, ids))).toEqual(
      new Map([
        [ids[0], { like_count: 15, view_count: 0 }],
        [ids[1], { like_count: 27, view_count: 0 }],
        [ids[2], { like_count: 30, view_count: 4 }],
      ]),
    );

    const failed = await settles(app.counters.flush());
    expect(failed.error).toBeInstanceOf(CounterStoreUnavailableError);
    expect(failed.batches).toBe(0);
    expect(await databaseLikes(ids)).toEqual([15, 27, 30]);

    // A new, empty Redis on the same port: the same app reconnects and counts on from the database.
    await server.restart();
    serverRunning = true;
    expect(await eventually(() => app.counters.increment(Article, ids[0], 'like_count', 2))).toBe(17);
    expect(await app.counters.increment(Article, ids[1], 'like_count', 1)).toBe(28);
    expect(await app.counters.get(Article, ids[2], 'view_count')).toBe(4);
    const report = await cleanFlush(app);
    expect(report.rows).toBe(2);
    expect(await databaseLikes(ids)).toEqual([17, 28, 30]);
    expect(await databaseViews(ids)).toEqual([0, 0, 4]);
  });

  it('fails increments fast while Redis is blackholed, reads the database, and recovers by itself', async () => {
    const server = await RedisServer.start();
    teardown.push(() => server.stop());
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: server.port });
    teardown.push(() => proxy.close());
    const app = await startApp(database.options, { redis: proxy.url });
    const ids = await insertArticles(observer, [100, 200]);
    await app.counters.increment(Article, ids[0], 'like_count', 10);
    await app.counters.increment(Article, ids[1], 'like_count', 20);
    await cleanFlush(app);
    // Counted but not flushed: the database does not have these yet.
    await app.counters.increment(Article, ids[0], 'like_count', 1);
    await app.counters.increment(Article, ids[1], 'like_count', 2);
    expect(await databaseLikes(ids)).toEqual([110, 220]);

    proxy.setMode('blackhole');

    // The first change reaches the socket and times out: Redis may have applied it, and the error says so.
    const timedOut = await settles(app.counters.increment(Article, ids[0], 'like_count', 100)).catch((e: Error) => e);
    expect(timedOut).toBeInstanceOf(CounterStoreUnavailableError);
    expect((timedOut as CounterStoreUnavailableError).outcomeUnknown).toBe(true);
    expect((timedOut as Error).message).toMatch(/the command may or may not have been applied/);
    for (const change of [
      () => app.counters.increment(Article, ids[0], 'like_count', 100),
      () => app.counters.decrement(Article, ids[1], 'like_count', 100),
      () => app.counters.increment(Article, ids[0], 'view_count', 100),
    ]) {
      await expect(settles(change())).rejects.toBeInstanceOf(CounterStoreUnavailableError);
    }
    expect(await settles(app.counters.get(Article, ids[0], 'like_count'))).toBe(110);
    expect(likesOf(await settles(app.counters.getMany(Article, ids, ['like_count'])), ids)).toEqual([110, 220]);
    const failed = await settles(app.counters.flush());
    expect(failed.error).toBeInstanceOf(CounterStoreUnavailableError);
    expect(await databaseLikes(ids)).toEqual([110, 220]);

    proxy.setMode('pass');

    // The connection the blackhole swallowed never answers again: the app must notice and reconnect.
    // The changes counted before the blackhole are still there; the refused ones never happened (and must
    // not be replayed by the client after it reconnects).
    expect(await eventually(() => app.counters.increment(Article, ids[0], 'like_count', 1))).toBe(112);
    expect(await app.counters.get(Article, ids[1], 'like_count')).toBe(222);
    await cleanFlush(app);
    expect(await databaseLikes(ids)).toEqual([112, 222]);
    expect(await databaseViews(ids)).toEqual([0, 0]);
  });

  it('keeps counting and reading from Redis while the database is down, then writes every change once', async () => {
    const outage = await databaseOutage(database);
    teardown.push(() => outage.close());
    const app = await startApp(outage.options, {});
    const ids = await insertArticles(observer, [1_000, 2_000, 3_000]);
    const expected = [1_000, 2_000, 3_000];
    const change = async (index: number, by: number) => {
      expected[index] += by;
      expect(await app.counters.increment(Article, ids[index], 'like_count', by)).toBe(expected[index]);
    };
    await change(0, 1);
    await change(1, 2);
    await change(2, 3);
    await cleanFlush(app);
    await change(0, 10);
    await change(1, 20);
    const beforeOutage = await databaseLikes(ids);
    expect(beforeOutage).toEqual([1_001, 2_002, 3_003]);
    const [notLoaded] = await insertArticles(observer, [5]);

    outage.begin();
    // A row not yet in Redis must be loaded from the database: the caller gets a counter error, not the
    // driver's. (SQLite in WAL mode still serves reads while another connection holds the write lock.)
    const loading = await app.counters.increment(Article, notLoaded, 'like_count').catch((error: Error) => error);
    if (databaseName === 'sqlite') {
      expect(loading).toBe(6);
    } else {
      expect(loading).toBeInstanceOf(CounterDatabaseUnavailableError);
      expect((loading as Error).cause).toBeInstanceOf(Error);
    }
    for (let round = 1; round <= 3; round++) {
      const failed = await settles(app.counters.flush(), 10_000);
      expect(failed.error).toBeDefined();
      expect(failed.failedShards).toBeGreaterThan(0);
      expect(failed.batches).toBe(0);
      expect(await databaseLikes(ids)).toEqual(beforeOutage);

      await change(0, round);
      await change(1, -round);
      await change(2, 100 * round);
      expect(await app.counters.get(Article, ids[2], 'like_count')).toBe(expected[2]);
      expect(likesOf(await app.counters.getMany(Article, ids, ['like_count']), ids)).toEqual(expected);
    }
    expect(await databaseLikes(ids)).toEqual(beforeOutage);

    outage.end();
    const reports = [await eventually(() => cleanFlush(app))];
    while (reports.at(-1)!.batches > 0) reports.push(await cleanFlush(app));
    expect(reports.reduce((sum, report) => sum + report.recoveredBatches, 0)).toBeGreaterThanOrEqual(1);
    expect(await databaseLikes(ids)).toEqual(expected);
    expect(expected).toEqual([1_017, 2_016, 3_603]);
    expect(likesOf(await app.counters.getMany(Article, ids, ['like_count']), ids)).toEqual(expected);
    expect((await scanKeys(redis, app.keyPrefix)).filter((key) => key.endsWith(':batch'))).toEqual([]);
    // A flush with nothing left writes nothing more.
    expect((await cleanFlush(app)).batches).toBe(0);
    expect(await databaseLikes(ids)).toEqual(expected);
  });

  it('stops a flush after a few failed shards instead of waiting on every dirty shard', async () => {
    const outage = await databaseOutage(database);
    teardown.push(() => outage.close());
    // Batches of one row: a transaction holds one shard, so every shard would take a failed transaction.
    const app = await startApp(outage.options, { shards: 8, flushBatchSize: 1 });
    const keys = new CounterKeys(app.keyPrefix, 8);
    const ids = await insertArticles(
      observer,
      Array.from({ length: 40 }, () => 0),
      0,
      spreadIds(keys, 40),
    );
    for (const id of ids) await app.counters.increment(Article, id, 'like_count');
    expect(new Set(ids.map((id) => keys.shardOf(String(id)))).size).toBe(8);

    outage.begin();
    const failed = await settles(app.counters.flush(), 10_000);
    // Three failures stop it; shards already being written in parallel may add their own failure.
    expect(failed.failedShards).toBeGreaterThanOrEqual(3);
    expect(failed.failedShards).toBeLessThan(8);
    outage.end();
    await eventually(() => cleanFlush(app));
    while ((await cleanFlush(app)).batches > 0);
    expect(await databaseLikes(ids)).toEqual(ids.map(() => 1));
  });

  it('retries the scheduled flush with backoff while the database is down and catches up by itself', async () => {
    const outage = await databaseOutage(database);
    teardown.push(() => outage.close());
    const app = await startApp(outage.options, {
      flushEnabled: true,
      flushIntervalMs: FLUSH_INTERVAL_MS,
      flushMaxBackoffMs: FLUSH_MAX_BACKOFF_MS,
    });
    const flusher = app.app.get(CounterFlusher);
    const flush = flusher.flush.bind(flusher);
    const attempts: Array<{ start: number; end?: number; failed?: boolean }> = [];
    vi.spyOn(flusher, 'flush').mockImplementation(async () => {
      const attempt: { start: number; end?: number; failed?: boolean } = { start: Date.now() };
      attempts.push(attempt);
      const report = await flush();
      Object.assign(attempt, { end: Date.now(), failed: report.error !== undefined });
      return report;
    });

    const ids = await insertArticles(observer, [0, 50]);
    const expected = [0, 50];
    const change = async (index: number, by: number) => {
      expected[index] += by;
      expect(await app.counters.increment(Article, ids[index], 'like_count', by)).toBe(expected[index]);
    };
    await change(0, 3);
    await change(1, 4);

    outage.begin();
    await change(0, 5);
    await change(1, 6);
    const failedSince = attempts.length;
    const failures = () => attempts.slice(failedSince).filter((attempt) => attempt.failed);
    await eventually(async () => expect(failures().length).toBeGreaterThanOrEqual(6));
    await change(0, 7);
    expect(await app.counters.get(Article, ids[0], 'like_count')).toBe(expected[0]);
    expect(await databaseLikes(ids)).not.toEqual(expected);

    // Backoff: from the third failure on, the next attempt waits well beyond one interval.
    const failed = failures();
    const waits = failed.slice(2, -1).map((attempt) => {
      const next = attempts[attempts.indexOf(attempt) + 1];
      return next.start - attempt.end!;
    });
    expect(waits.length).toBeGreaterThanOrEqual(3);
    for (const wait of waits) expect(wait).toBeGreaterThanOrEqual(1.5 * FLUSH_INTERVAL_MS);

    outage.end();
    await eventually(async () => expect(await databaseLikes(ids)).toEqual(expected));
    expect(expected).toEqual([15, 60]);
    expect(likesOf(await app.counters.getMany(Article, ids, ['like_count']), ids)).toEqual(expected);
  });
});

// A database that stops answering without an error (a firewall dropping packets) must not hang a flush,
// a read, or the final flush at shutdown: each gives up after databaseTimeoutMs. SQLite has no network
// to lose; its lock outage above already fails fast.
describe.each(DATABASES.filter((name) => name !== 'sqlite'))('a silent database on %s', (databaseName) => {
  const DATABASE_TIMEOUT_MS = 500;
  const redis = testRedis();
  const keyPrefix = uniquePrefix('silent-db');
  let database: TestDatabase;
  let observer: DataSource;
  let proxy: TcpProxy;
  let app: CounterApp;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    observer = await openObserver(database);
    const options = database.options as DataSourceOptions & { host: string; port: number };
    proxy = await TcpProxy.start({ host: options.host, port: options.port });
    app = await startCounterApp({
      database: { ...options, host: proxy.host, port: proxy.port, poolSize: 6 } as DataSourceOptions,
      keyPrefix,
      synchronize: false,
      counter: { databaseTimeoutMs: DATABASE_TIMEOUT_MS, flushOnShutdown: true, shards: 4 },
    });
  });

  afterAll(async () => {
    proxy.setMode('reset');
    await settles(app.close(), 10_000).catch(() => undefined);
    await proxy.close();
    await observer.destroy();
    await database.drop();
    await deleteKeys(redis, keyPrefix);
    redis.disconnect();
  });

  it('gives up on a flush, a read and the final flush after databaseTimeoutMs, then writes everything once', async () => {
    const ids = await insertArticles(observer, [10, 20, 30, 40]);
    for (const id of ids) expect(await app.counters.increment(Article, id, 'like_count', 5)).toBeGreaterThan(0);
    const [unseeded] = await insertArticles(observer, [7]);

    proxy.setMode('blackhole');
    const failed = await settles(app.counters.flush(), 4 * DATABASE_TIMEOUT_MS);
    expect(failed.error).toBeInstanceOf(CounterDatabaseUnavailableError);
    expect(failed.batches).toBe(0);
    // It stopped at the timeout instead of waiting on every dirty shard in turn.
    expect(failed.failedShards).toBeLessThanOrEqual(app.app.get(CounterDatabase).transactionsAtOnce);
    await expect(
      settles(app.counters.get(Article, unseeded, 'like_count'), 4 * DATABASE_TIMEOUT_MS),
    ).rejects.toBeInstanceOf(CounterDatabaseUnavailableError);
    // Seeded rows keep counting from Redis.
    expect(await app.counters.increment(Article, ids[0], 'like_count')).toBe(16);
    await settles(app.app.get(CounterFlushScheduler).beforeApplicationShutdown(), 4 * DATABASE_TIMEOUT_MS);
    expect(await databaseLikes(ids)).toEqual([10, 20, 30, 40]);

    // The connections caught in the blackhole are dead for good: resetting them lets the pool replace them.
    proxy.setMode('reset');
    await new Promise((resolve) => setTimeout(resolve, 100));
    proxy.setMode('pass');
    await eventually(async () => {
      const report = await app.counters.flush();
      if (report.error || report.busyShards > 0) throw report.error ?? new Error('a lease is still held');
      expect(await databaseLikes(ids)).toEqual([16, 25, 35, 45]);
    });
  });

  async function databaseLikes(ids: number[]): Promise<number[]> {
    const counts = await articleCounts(observer, ids);
    return ids.map((id) => counts.get(id)!.likes);
  }
});
