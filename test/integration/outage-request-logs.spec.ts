import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { CounterExceptionFilter } from '../../lib/index.js';
import { ArticleLikesController } from '../fixtures/article-likes.controller.js';
import { LiveCountsController } from '../fixtures/live-counts.controller.js';
import { startCounterApp } from '../support/counter-app.js';
import { useFaultSuite } from '../support/fault-suite.js';
import { CONNECTION_LOST, CONNECTION_RESTORED, REDIS_UNREACHABLE } from '../support/outage-lines.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { DATABASES } from '../../support/databases.js';
import { RedisServer } from '../../support/redis-server.js';
import { uniquePrefix } from '../../support/redis.js';
import { insertArticles } from '../../support/rows.js';

/** The filter as a user registers it. */
@Module({ providers: [{ provide: APP_FILTER, useClass: CounterExceptionFilter }] })
class CounterFilterModule {}

const REQUESTS = 5;

// An app under load while Redis is down answers every refused change (503) and every read (database
// values) without a line of its own: the outage is logged once when it begins and once when it ends
// (outage-logs.spec.ts), each request at debug level only.
describe.each(DATABASES)('request logs during a Redis outage on %s', (databaseName) => {
  const suite = useFaultSuite(databaseName);
  const { prefixes, teardown } = suite;
  let observer: DataSource;
  beforeAll(() => void ({ observer } = suite));

  it('answers each refused change and each read without a log line of its own', async () => {
    // Kept on disk through the kill: the restart is an outage, not a loss of data.
    const server = await RedisServer.start({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    teardown.push(() => server.stop());
    const keyPrefix = uniquePrefix('outage-requests');
    prefixes.push(keyPrefix);
    const app = await startCounterApp({
      database: suite.database.options,
      keyPrefix,
      synchronize: false,
      controllers: [ArticleLikesController, LiveCountsController],
      imports: [CounterFilterModule],
      counter: { redis: server.url, flushOnShutdown: false, redisCommandTimeoutMs: 500 },
    });
    teardown.push(() => app.close());
    const logger = new RecordingLogger();
    app.app.useLogger(logger);
    const http = request(app.app.getHttpServer());
    const [id] = await insertArticles(observer, [7]);
    expect((await http.post(`/articles/${id}/like`)).body).toEqual({ likeCount: 8 });
    logger.lines.length = 0;

    await server.kill();
    await expect
      .poll(() => logger.lines.some((line) => expect.objectContaining(CONNECTION_LOST).asymmetricMatch(line)))
      .toBe(true);
    for (let attempt = 0; attempt < REQUESTS; attempt++) {
      const refused = await http.post(`/articles/${id}/like`);
      expect([refused.status, refused.body.code, refused.headers['retry-after']]).toEqual([
        503,
        'CounterStoreUnavailableError',
        '5',
      ]);
      // The database's value: the change Redis took was never flushed.
      const read = await http.get(`/live/articles/${id}`);
      expect([read.status, read.body.likeCount]).toEqual([200, 7]);
    }
    expect(logger.shown()).toEqual([CONNECTION_LOST, REDIS_UNREACHABLE]);
    // Each request is still there for whoever turns debug on.
    expect(logger.debugLines()).toHaveLength(2 * REQUESTS);

    await server.restart();
    await expect.poll(async () => (await app.counters.status()).redisAvailable, { timeout: 10_000 }).toBe(true);
    expect((await http.post(`/articles/${id}/like`)).body).toEqual({ likeCount: 9 });
    expect(logger.shown()).toEqual([
      CONNECTION_LOST,
      REDIS_UNREACHABLE,
      CONNECTION_RESTORED,
      { level: 'log', context: 'CounterFlush', message: `Redis is back after ${REQUESTS} refused changes.` },
    ]);
  });
});
