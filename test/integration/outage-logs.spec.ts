import type { DataSource, DataSourceOptions } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { CounterStoreUnavailableError, type CounterModuleOptions } from '../../lib/index.js';
import { FlushHistory } from '../../lib/flush/flush.history.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { useFaultSuite } from '../support/fault-suite.js';
import { DATABASES, type TestDatabase } from '../../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { RedisServer } from '../../support/redis-server.js';
import { uniquePrefix } from '../../support/redis.js';
import { insertArticles } from '../../support/rows.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { RecordingLogger, type LogLine } from '../support/recording-logger.js';
import { scheduledFlush } from '../support/scheduled-flush.js';
import { CONNECTION_LOST, CONNECTION_RESTORED, REDIS_UNREACHABLE } from '../support/outage-lines.js';

/** Ports of the Redis servers these tests start and kill (the range given to this spec). */
const PORTS = { flushes: 6440, changes: 6441, nothingPending: 6442, pending: 6443 };
/** A server that keeps its data through a SIGKILL: a restart is then an outage, not a loss of data. */
const PERSISTENT = ['--appendonly', 'yes', '--appendfsync', 'always'];

/** A debug line of a failed flush: its attempt, the backoff it drew, and its reason. */
const failedFlushLine = (attempt: number) =>
  expect.stringMatching(
    new RegExp(
      `^Counter flush failed \\(attempt ${attempt}\\); the batch stays in Redis and is retried in \\d+ ms\\. \\S`,
    ),
  ) as unknown as string;

// What an operator reads while Redis or the database is down: one line when it goes, one when it comes
// back, nothing per failed flush in between (but at debug level), stacks only for errors no outage
// explains, and at shutdown what this instance knows is left in Redis.
describe.each(DATABASES)('outage logs on %s', (databaseName) => {
  const suite = useFaultSuite(databaseName);
  const { prefixes, teardown } = suite;
  let database: TestDatabase;
  let observer: DataSource;
  beforeAll(() => void ({ database, observer } = suite));

  /** An app on `redis` whose log `logger` records; flushes run when the test ticks the scheduler. */
  async function startApp(logger: RecordingLogger, counter: CounterModuleOptions, connection?: DataSourceOptions) {
    const keyPrefix = uniquePrefix('outage-logs');
    prefixes.push(keyPrefix);
    const app = await startCounterApp({
      database: connection ?? database.options,
      keyPrefix,
      synchronize: false,
      counter: { flushOnShutdown: false, flushMaxBackoffMs: 1, redisCommandTimeoutMs: 500, ...counter },
    });
    teardown.push(() => app.close());
    app.app.useLogger(logger);
    return app;
  }

  async function startRedis(port: number): Promise<RedisServer> {
    const server = await RedisServer.start({ port, args: PERSISTENT });
    teardown.push(() => server.stop());
    return server;
  }

  async function untilLogged(logger: RecordingLogger, line: LogLine): Promise<void> {
    await expect
      .poll(() => logger.lines.some((seen) => expect.objectContaining(line).asymmetricMatch(seen)))
      .toBe(true);
  }

  async function untilRedisAnswers(app: CounterApp): Promise<void> {
    await expect.poll(async () => (await app.counters.status()).redisAvailable, { timeout: 10_000 }).toBe(true);
  }

  /** An app on a Redis of its own on `port`, its log recorded, and an article it counted 2 likes of. */
  async function appOnOwnRedis(port: number, counter: CounterModuleOptions = {}) {
    const server = await startRedis(port);
    const logger = new RecordingLogger();
    const app = await startApp(logger, { redis: server.url, ...counter });
    const [id] = await insertArticles(observer, [10]);
    await app.counters.increment(Article, id, 'like_count', 2);
    return { server, logger, app, id };
  }

  /** Kills the app's Redis, its log cleared first: what it logs from then on is the outage's. */
  async function killRedis(server: RedisServer, logger: RecordingLogger): Promise<void> {
    logger.lines.length = 0;
    await server.kill();
    await untilLogged(logger, CONNECTION_LOST);
  }

  it('logs Redis going away once, without a stack, and its return after 5 failed flushes', async () => {
    const { server, logger, app } = await appOnOwnRedis(PORTS.flushes);
    await scheduledFlush(app);

    await killRedis(server, logger);
    for (let flush = 0; flush < 5; flush++) await scheduledFlush(app);
    expect(app.app.get(FlushHistory).consecutiveFailedFlushes).toBe(5);
    expect(logger.shown()).toEqual([CONNECTION_LOST, REDIS_UNREACHABLE]);
    expect(logger.debugLines()).toEqual([1, 2, 3, 4, 5].map(failedFlushLine));

    await server.restart();
    await untilRedisAnswers(app);
    await scheduledFlush(app);
    expect(logger.shown()).toEqual([
      CONNECTION_LOST,
      REDIS_UNREACHABLE,
      CONNECTION_RESTORED,
      { level: 'log', context: 'CounterFlush', message: 'Redis is back after 5 failed flushes.' },
    ]);
    expect(app.app.get(FlushHistory).consecutiveFailedFlushes).toBe(0);
  });

  it('logs Redis going away at the first refused change, and its return at the first change it takes', async () => {
    const { server, logger, app, id } = await appOnOwnRedis(PORTS.changes);

    await killRedis(server, logger);
    for (let change = 0; change < 3; change++) {
      await expect(app.counters.increment(Article, id, 'like_count')).rejects.toBeInstanceOf(
        CounterStoreUnavailableError,
      );
    }
    expect(logger.shown()).toEqual([CONNECTION_LOST, REDIS_UNREACHABLE]);

    await server.restart();
    await untilRedisAnswers(app);
    expect(await app.counters.increment(Article, id, 'like_count')).toBe(13);
    expect(logger.shown()).toEqual([
      CONNECTION_LOST,
      REDIS_UNREACHABLE,
      CONNECTION_RESTORED,
      { level: 'log', context: 'CounterFlush', message: 'Redis is back after 3 refused changes.' },
    ]);
  });

  it('says at shutdown that nothing of its own was pending when Redis refused every change since its flush', async () => {
    const { server, logger, app, id } = await appOnOwnRedis(PORTS.nothingPending, { flushOnShutdown: true });
    await scheduledFlush(app);

    await killRedis(server, logger);
    for (let change = 0; change < 2; change++) {
      await expect(app.counters.increment(Article, id, 'like_count')).rejects.toBeInstanceOf(
        CounterStoreUnavailableError,
      );
    }
    await app.close();
    expect(logger.shown()).toEqual([
      CONNECTION_LOST,
      REDIS_UNREACHABLE,
      {
        level: 'log',
        context: 'CounterFlush',
        message:
          'Redis is unreachable, so the final counter flush could not run; this instance accepted no counter ' +
          'change since its last flush (2 were refused while Redis was unreachable): nothing of its own was pending.',
      },
    ]);
    expect(logger.lines.map(({ message }) => message).join('\n')).not.toContain('unknown number');
  });

  it('says at shutdown how many changes it accepted since its last flush may wait in Redis', async () => {
    const { server, logger, app, id } = await appOnOwnRedis(PORTS.pending, { flushOnShutdown: true });
    await scheduledFlush(app);
    for (let change = 0; change < 3; change++) await app.counters.increment(Article, id, 'view_count');

    await killRedis(server, logger);
    await app.close();
    expect(logger.shown()).toEqual([
      CONNECTION_LOST,
      {
        level: 'warn',
        context: 'CounterFlush',
        message:
          'Redis is unreachable, so the final counter flush could not run; 3 counter changes this instance ' +
          'accepted since its last flush may wait in Redis. An instance flushes them once Redis is back; ' +
          'nothing is lost unless Redis lost its data.',
      },
    ]);
  });

  it('keeps a stack on every failed flush whose error no outage explains', async () => {
    const logger = new RecordingLogger();
    const app = await startApp(logger, {});
    const [id] = await insertArticles(observer, [10]);
    await app.counters.increment(Article, id, 'like_count', 2);
    // The ledger gone: each write fails with the database's "no such table", a fault no retry fixes.
    const { schema } = database.options as { schema?: string };
    const rename = (from: string, to: string) =>
      observer.query(`ALTER TABLE ${schema ? `"${schema}".` : ''}${from} RENAME TO ${to}`);
    await rename('counter_ledger', 'counter_ledger_away');
    try {
      await scheduledFlush(app);
      await scheduledFlush(app);
    } finally {
      await rename('counter_ledger_away', 'counter_ledger');
    }
    const shown = logger.shown();
    expect(shown).toEqual(
      [1, 2].map((attempt) => ({
        level: 'error',
        context: 'CounterFlush',
        message: expect.stringMatching(
          new RegExp(
            `^Counter flush failed \\(attempt ${attempt}\\); the batch stays in Redis and is retried in \\d+ ms\\. ` +
              `.*counter_ledger`,
          ),
        ),
        stack: expect.stringMatching(/\n\s+at /),
      })),
    );
    expect(logger.debugLines()).toEqual([]);
    await scheduledFlush(app);
    expect(logger.shown()).toHaveLength(2);
  });

  // SQLite has no server to lose: a locked file is a lock conflict, which no outage explains.
  if (databaseName !== 'sqlite') {
    it('logs the database going away once, without a stack, and its return after 3 failed flushes', async () => {
      const direct = database.options as DataSourceOptions & { host: string; port: number };
      const proxy = await TcpProxy.start({ host: direct.host, port: direct.port });
      teardown.push(() => proxy.close());
      const timeouts = databaseName === 'postgres' ? { connectTimeoutMS: 1_000 } : { connectTimeout: 1_000 };
      const logger = new RecordingLogger();
      const app = await startApp(logger, {}, {
        ...direct,
        host: proxy.host,
        port: proxy.port,
        poolSize: 2,
        ...timeouts,
      } as DataSourceOptions);
      const [id] = await insertArticles(observer, [10]);
      await app.counters.increment(Article, id, 'like_count', 2);
      logger.lines.length = 0;

      proxy.setMode('reset');
      for (let flush = 0; flush < 3; flush++) await scheduledFlush(app);
      const unreachable: LogLine = {
        level: 'error',
        context: 'CounterFlush',
        message: expect.stringMatching(
          /^The database became unreachable \([^\n]+\)\. Counter changes wait in Redis and reads come from there; flushes retry with backoff, logged at debug level\.$/,
        ) as unknown as string,
        stack: undefined,
      };
      expect(logger.shown()).toEqual([unreachable]);
      expect(logger.debugLines()).toEqual([1, 2, 3].map(failedFlushLine));

      proxy.setMode('pass');
      await scheduledFlush(app);
      expect(logger.shown()).toEqual([
        unreachable,
        { level: 'log', context: 'CounterFlush', message: 'The database is back after 3 failed flushes.' },
      ]);
      expect((await observer.getRepository(Article).findOneByOrFail({ id })).likeCount).toBe(12);
    });
  }
});
