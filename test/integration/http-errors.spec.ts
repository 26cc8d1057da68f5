import { Body, ConsoleLogger, Controller, Post, type INestApplication } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CounterExceptionFilter,
  CounterLedgerEntry,
  CounterModule,
  CounterService,
  type RecountOptions,
} from '../../lib/index.js';
import { ArticleLikesController } from '../fixtures/article-likes.controller.js';
import { Article, ENTITIES } from '../fixtures/entities.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../support/databases.js';
import { freePort } from '../support/free-port.js';
import { NestHarness } from '../support/nest-harness.js';
import { deleteKeys, snapshot, testRedis, uniquePrefix, REDIS_URL } from '../support/redis.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const INT_RANGE = '[-2147483648, 2147483647]';
const INT64_RANGE = '[-9223372036854775808, 9223372036854775807]';

/** A recount whose options come from the request body, as an admin route takes them. */
@Controller('articles')
class ArticleRecountController {
  constructor(private readonly counters: CounterService) {}

  @Post('recount')
  recount(@Body() options: RecountOptions) {
    return this.counters.recount(Article, 'like_count', options);
  }
}

/** Log lines at ERROR, which a bad request must never cause. */
class RecordingLogger extends ConsoleLogger {
  readonly errors: string[] = [];
  override error(message: unknown): void {
    this.errors.push(String(message));
  }
  override warn(): void {}
  override log(): void {}
}

// The exported filter answers each bad input with its status and a clear body, and nothing is written.
describe.each(DATABASES)('CounterExceptionFilter over HTTP on %s', (databaseName) => {
  const prefix = uniquePrefix('http');
  const redis = testRedis();
  const harness = new NestHarness();
  const logger = new RecordingLogger();
  let database: TestDatabase;
  let app: INestApplication;
  let dataSource: DataSource;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    app = await startApp(harness, database, REDIS_URL, prefix);
    app.useLogger(logger);
    dataSource = app.get(DataSource);
  });

  afterAll(async () => {
    await harness.closeAll();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  const insertArticle = (likeCount: number) =>
    dataSource.getRepository(Article).save({ title: 'http', likeCount, viewCount: 0 });
  const storedArticles = () =>
    dataSource.getRepository(Article).find({ select: { id: true, likeCount: true }, order: { id: 'ASC' } });

  /** Sends the request; expects the status and body, and Redis and the database as they were. */
  async function expectRefused(
    send: (http: ReturnType<typeof request>) => request.Test,
    status: number,
    body: { error: string; code: string; message: string },
  ) {
    const redisBefore = await snapshot(redis, prefix);
    const databaseBefore = await storedArticles();
    const response = await send(request(app.getHttpServer()));
    expect(response.status).toBe(status);
    expect(response.body).toEqual({ statusCode: status, ...body });
    expect(await snapshot(redis, prefix)).toEqual(redisBefore);
    expect(await storedArticles()).toEqual(databaseBefore);
  }

  const badId = (id: string, range?: string) => ({
    error: 'Bad Request',
    code: 'InvalidCounterIdError',
    message: range
      ? `Article ids must be integers in ${range}, the range of its primary column's type; got "${id}".`
      : `Article ids must be integers; got "${id}".`,
  });

  it('answers an id that is not an integer with 400', async () => {
    for (const id of ['abc', '1.5', '1e3', ' 7']) {
      await expectRefused((http) => http.post(`/articles/${encodeURIComponent(id)}/like`), 400, badId(id));
    }
  });

  it("answers an id outside the primary column's type with 400, before any query", async () => {
    // Article's id is an int: 32 bits on PostgreSQL and MariaDB, SQLite's integers are 64 bits.
    const [tooSmall, tooBig] =
      databaseName === 'sqlite' ? ['-9223372036854775809', '9223372036854775808'] : ['-2147483649', '99999999999'];
    const range = databaseName === 'sqlite' ? INT64_RANGE : INT_RANGE;
    await expectRefused((http) => http.post(`/articles/${tooBig}/like`), 400, badId(tooBig, range));
    await expectRefused((http) => http.delete(`/articles/${tooSmall}/like`), 400, badId(tooSmall, range));
    await expectRefused((http) => http.get(`/articles/${tooBig}/likes`), 400, badId(tooBig, range));
  });

  it('answers a delta that is not a safe integer with 400', async () => {
    const { id } = await insertArticle(3);
    for (const by of ['1.5', 'ten', '9007199254740992']) {
      await expectRefused((http) => http.post(`/articles/${id}/like?by=${by}`), 400, {
        error: 'Bad Request',
        code: 'InvalidCounterDeltaError',
        message: `A counter can only change by a safe integer (between -(2^53-1) and 2^53-1); got ${Number(by)}.`,
      });
    }
  });

  it('answers an idempotency key that is empty or too long with 400', async () => {
    const { id } = await insertArticle(3);
    for (const key of ['', 'k'.repeat(201)]) {
      await expectRefused((http) => http.post(`/articles/${id}/like?key=${key}`), 400, {
        error: 'Bad Request',
        code: 'InvalidIdempotencyKeyError',
        message:
          `An idempotency key must be a non-empty string of at most 200 characters; got a string of ` +
          `${key.length} characters. Use one key per change, e.g. a UUID made when the change is first ` +
          `attempted and reused for its retries.`,
      });
    }
  });

  it('answers an invalid option of recount with 400, before anything is read', async () => {
    await expectRefused((http) => http.post('/articles/recount').send({ batchSize: 0 }), 400, {
      error: 'Bad Request',
      code: 'InvalidCounterOptionError',
      message: 'CounterService.recount() option "batchSize" must be a positive safe integer; got 0.',
    });
    await expectRefused((http) => http.post('/articles/recount').send({ ids: '12' }), 400, {
      error: 'Bad Request',
      code: 'InvalidCounterOptionError',
      message: 'CounterService.recount() option "ids" must be an array of ids; got "12".',
    });
  });

  it('answers a row that does not exist with 404', async () => {
    await expectRefused((http) => http.post('/articles/424242/like'), 404, {
      error: 'Not Found',
      code: 'CounterRowNotFoundError',
      message: 'Article with id 424242 does not exist in the database, so its counters cannot be read or changed.',
    });
  });

  it('answers a change below the counter’s minimum with 409', async () => {
    const { id } = await insertArticle(1);
    await request(app.getHttpServer()).delete(`/articles/${id}/like`).expect(200, { likeCount: 0 });
    await expectRefused((http) => http.delete(`/articles/${id}/like`), 409, {
      error: 'Conflict',
      code: 'CounterOutOfRangeError',
      message:
        `Article.like_count is 0; changing it by -1 would leave its allowed range [0, 2147483647], so nothing was changed.`.replace(
          '2147483647',
          databaseName === 'sqlite' ? String(Number.MAX_SAFE_INTEGER) : '2147483647',
        ),
    });
  });

  it('logs nothing at ERROR for any of them', () => {
    expect(logger.errors).toEqual([]);
  });
});

describe('CounterExceptionFilter when Redis or the database is unavailable', () => {
  const prefix = uniquePrefix('http-503');
  const harness = new NestHarness();
  const redis = testRedis();
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
  });

  afterAll(async () => {
    await harness.closeAll();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  const unavailable = (code: string) => ({
    statusCode: 503,
    error: 'Service Unavailable',
    code,
    message: 'Counters are unavailable for a moment (Redis or the database cannot be reached); retry later.',
  });

  it('answers 503 with Retry-After while Redis cannot be reached', async () => {
    const app = await startApp(harness, database, `redis://127.0.0.1:${await freePort()}`, prefix);
    const response = await request(app.getHttpServer()).post('/articles/1/like');
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.body).toEqual(unavailable('CounterStoreUnavailableError'));
  });

  it('answers 503 with Retry-After while the database cannot be reached', async () => {
    const postgres = database.options as { host: string; port: number };
    const proxy = await TcpProxy.start({ host: postgres.host, port: postgres.port });
    try {
      const viaProxy = { ...database, options: { ...database.options, host: '127.0.0.1', port: proxy.port } };
      const app = await startApp(harness, viaProxy as TestDatabase, REDIS_URL, prefix);
      const { id } = await app
        .get(DataSource)
        .getRepository(Article)
        .save({ title: 'down', likeCount: 0, viewCount: 0 });
      proxy.setMode('reset');
      const response = await request(app.getHttpServer()).post(`/articles/${id}/like`);
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBe('5');
      expect(response.body).toEqual(unavailable('CounterDatabaseUnavailableError'));
    } finally {
      await proxy.close();
    }
  });
});

function startApp(harness: NestHarness, database: TestDatabase, redis: string, keyPrefix: string) {
  return harness.start({
    database: database.options,
    entities: [...ENTITIES, CounterLedgerEntry],
    imports: [CounterModule.forRoot({ redis, keyPrefix, shards: 8, flushEnabled: false, databaseTimeoutMs: 3000 })],
    controllers: [ArticleLikesController, ArticleRecountController],
    providers: [{ provide: APP_FILTER, useClass: CounterExceptionFilter }],
  });
}
