import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterStoreUnavailableError } from '../../lib/index.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { DATABASES, type TestDatabase } from '../../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { useFaultSuite } from '../support/fault-suite.js';
import { RedisServer } from '../../support/redis-server.js';
import { uniquePrefix } from '../../support/redis.js';
import { insertArticles } from '../../support/rows.js';
import type { DataSource } from 'typeorm';

/** The module's default: its commands, and a socket that stops answering, time out after this. */
const REDIS_TIMEOUT_MS = 1_000;
/** Load before the kill, so that commands are in flight on the socket that dies. */
const LOAD_BEFORE_MS = 300;
/** Load after the restart: past two socket timeouts, when a timer left from the dead socket would fire. */
const LOAD_AFTER_MS = 2_500;
/** Callers incrementing at once, each in a loop. */
const CALLERS = 8;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// What a lost Redis connection costs (G7): one outage per Redis restart, however the client's timers fall,
// and a change refused before it was sent is reported as not sent.
describe.each(DATABASES)('a lost Redis connection on %s', (databaseName) => {
  const suite = useFaultSuite(databaseName);
  const { prefixes, teardown } = suite;
  let database: TestDatabase;
  let observer: DataSource;
  beforeAll(() => void ({ database, observer } = suite));

  async function startApp(connection: string | Redis): Promise<CounterApp> {
    const keyPrefix = uniquePrefix('reconnect');
    prefixes.push(keyPrefix);
    const app = await startCounterApp({
      database: database.options,
      keyPrefix,
      synchronize: false,
      redis: typeof connection === 'string' ? undefined : connection,
      counter: {
        ...(typeof connection === 'string' ? { redis: connection } : {}),
        flushOnShutdown: false,
        redisCommandTimeoutMs: REDIS_TIMEOUT_MS,
      },
    });
    teardown.push(() => app.close());
    return app;
  }

  it('costs one outage per Redis restart under load, and every change after it succeeds', async () => {
    const server = await RedisServer.start();
    teardown.push(() => server.stop());
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const app = await startApp(server.url);
    const ids = await insertArticles(observer, [0, 0, 0, 0]);

    const outcomes: Array<{ at: number; error?: Error }> = [];
    let running = true;
    const callers = Array.from({ length: CALLERS }, async (_, caller) => {
      while (running) {
        try {
          await app.counters.increment(Article, ids[caller % ids.length], 'like_count');
          outcomes.push({ at: Date.now() });
        } catch (error) {
          outcomes.push({ at: Date.now(), error: error as Error });
          // A refusal is immediate: let the event loop turn before the next try.
          await sleep(1);
        }
      }
    });
    await sleep(LOAD_BEFORE_MS);
    // SIGKILL, then a new, empty redis-server on the same port.
    await server.restart();
    const restartedAt = Date.now();
    await sleep(LOAD_AFTER_MS);
    running = false;
    await Promise.all(callers);

    const lost = warn.mock.calls
      .map(([message]) => String(message))
      .filter((m) => m.startsWith('Redis connection lost'));
    expect(lost, lost.join('\n')).toHaveLength(1);
    const recovered = outcomes.findIndex(({ at, error }) => at >= restartedAt && !error);
    expect(recovered).toBeGreaterThan(-1);
    const failedAfterRecovery = outcomes.slice(recovered).flatMap(({ error }) => (error ? [error.message] : []));
    expect(failedAfterRecovery).toEqual([]);
    for (const { error } of outcomes) if (error) expect(error).toBeInstanceOf(CounterStoreUnavailableError);
  });

  it('reports a change that the client refused before sending it as not sent', async () => {
    const server = await RedisServer.start();
    teardown.push(() => server.stop());
    const client = new Redis(server.url, {
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      commandTimeout: REDIS_TIMEOUT_MS,
    });
    client.on('error', () => undefined);
    teardown.push(() => client.disconnect());
    const app = await startApp(client);
    const [id] = await insertArticles(observer, [5]);
    expect(await app.counters.increment(Article, id, 'like_count')).toBe(6);

    // The socket dies under the client, which still reports itself ready until its close event: ioredis
    // refuses the next command without writing it ("Stream isn't writeable").
    client.stream.destroy();
    expect(client.status).toBe('ready');
    const refused = await app.counters.increment(Article, id, 'like_count').catch((error: Error) => error);
    expect(refused).toBeInstanceOf(CounterStoreUnavailableError);
    expect((refused as Error).message).toBe(
      "Redis is not available (Stream isn't writeable and enableOfflineQueue options is false); nothing was sent " +
        'to it. Retry once Redis is reachable.',
    );
    expect((refused as CounterStoreUnavailableError).outcomeUnknown).toBe(false);
  });
});
