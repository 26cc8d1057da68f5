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
import { CounterChangesController } from '../fixtures/counter-changes.controller.js';
import { Article, ENTITIES, Remark } from '../fixtures/entities.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { freePort } from '../../support/free-port.js';
import { NestHarness } from '../support/nest-harness.js';
import { deleteKeys, snapshot, testRedis, uniquePrefix, REDIS_URL } from '../../support/redis.js';
import { seededRandom, testSeed } from '../../support/seeded-random.js';
import { TcpProxy } from '../../support/tcp-proxy.js';

const INT_RANGE = '[-2147483648, 2147483647]';
const INT64_RANGE = '[-9223372036854775808, 9223372036854775807]';
/** Remark's id column is a varchar(64). */
const REMARK_ID_LENGTH = 64;
/** Random strings the property test sends as each of: an Article id, a Remark id, an idempotency key. */
const RANDOM_STRINGS = 300;

/** A piece of the property test's strings: what breaks keys, encodings and drivers (rare), and plain text. */
function randomPiece(random: () => number): string {
  const pick = random();
  if (pick < 0.02) return String.fromCharCode(0xd800 + Math.floor(random() * 0x400)); // a high surrogate, maybe paired
  if (pick < 0.04) return String.fromCharCode(0xdc00 + Math.floor(random() * 0x400)); // a low surrogate
  if (pick < 0.06) return '\u0000';
  if (pick < 0.15) return String.fromCharCode(1 + Math.floor(random() * 31)); // control characters
  if (pick < 0.3) return '{}: '[Math.floor(random() * 4)];
  if (pick < 0.4) return String.fromCodePoint(0x1f600 + Math.floor(random() * 80)); // emoji, outside the BMP
  if (pick < 0.5) {
    return ['é', 'ß', '中', '\u0301', '\u202e', '\ufeff', '\ufffd', '\u007f', '%', '/', '"', "'", '\\'][
      Math.floor(random() * 13)
    ];
  }
  return 'abcxyzABCXYZ-_.'[Math.floor(random() * 15)]; // no digits: a digit alone could name an existing row
}

/** A random string: mostly short mixes of PIECES, some empty, some about Remark's id length, some 10,000 long. */
function randomString(random: () => number): string {
  const shape = random();
  const length =
    shape < 0.05
      ? 0
      : shape < 0.1
        ? 10_000
        : shape < 0.25
          ? REMARK_ID_LENGTH - 3 + Math.floor(random() * 6)
          : 1 + Math.floor(random() * 20);
  let text = '';
  while (text.length < length) text += randomPiece(random);
  return text;
}

/** A random integer text that names no row (they start at 9,000,000), sometimes beyond 32 or 64 bits. */
function randomIntegerText(random: () => number): string {
  const digits = 7 + Math.floor(random() * 15);
  let text = random() < 0.5 ? '-9' : '9';
  for (let i = 1; i < digits; i++) text += String(Math.floor(random() * 10));
  return text;
}

/** Whether a string survives UTF-8 (no lone surrogate): what the library must check before sending it anywhere. */
const isWellFormed = (text: string) => Buffer.from(text, 'utf8').toString('utf8') === text;

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

  it("answers a string id with a lone surrogate, NUL, or longer than its column with 400, in the library's words", async () => {
    const refused = (message: string) => ({ error: 'Bad Request', code: 'InvalidCounterIdError', message });
    const send = (id: string) => (http: ReturnType<typeof request>) => http.post('/changes/remarks').send({ id });
    await expectRefused(
      send('r\uD800x'),
      400,
      refused(
        'Remark ids must be well-formed Unicode without NUL characters; got a string with a lone surrogate ' +
          '(half of a UTF-16 character) at index 1.',
      ),
    );
    await expectRefused(
      send('r\u0000x'),
      400,
      refused(
        'Remark ids must be well-formed Unicode without NUL characters; got a string with a NUL character ' +
          '(U+0000) at index 1.',
      ),
    );
    await expectRefused(
      send('r'.repeat(REMARK_ID_LENGTH + 1)),
      400,
      refused(
        `Remark ids must be at most ${REMARK_ID_LENGTH} characters, the length of its primary column; got a ` +
          `string of ${REMARK_ID_LENGTH + 1} characters.`,
      ),
    );
    // Characters, not UTF-16 units, as the databases count them: 64 emoji fit.
    await expectRefused(send('😀'.repeat(REMARK_ID_LENGTH)), 404, {
      error: 'Not Found',
      code: 'CounterRowNotFoundError',
      message: `Remark with id ${'😀'.repeat(REMARK_ID_LENGTH)} does not exist in the database, so its counters cannot be read or changed.`,
    });
  });

  it('answers only 400, or 404 for a well-formed id of no row, to random ids and keys, and writes nothing', async () => {
    const seed = testSeed();
    const random = seededRandom(seed);
    const [min, max] = databaseName === 'sqlite' ? [-(2n ** 63n), 2n ** 63n - 1n] : [-(2n ** 31n), 2n ** 31n - 1n];
    const articleIdFits = (id: string) => /^-?(0|[1-9]\d*)$/.test(id) && BigInt(id) >= min && BigInt(id) <= max;
    const remarkIdFits = (id: string) =>
      id !== '' && isWellFormed(id) && !id.includes('\u0000') && [...id].length <= REMARK_ID_LENGTH;
    const keyFits = (key: string) => key !== '' && key.length <= 200 && isWellFormed(key);
    const entityOf: Record<string, string> = { articles: 'Article', remarks: 'Remark' };
    const cases: Array<{ route: string; body: { id: string; key?: string }; fits: boolean; refusal: string }> = [];
    for (let i = 0; i < RANDOM_STRINGS; i++) {
      const articleId = random() < 0.2 ? randomIntegerText(random) : randomString(random);
      const remarkId = randomString(random);
      const key = randomString(random);
      cases.push(
        {
          route: 'articles',
          body: { id: articleId },
          fits: articleIdFits(articleId),
          refusal: 'InvalidCounterIdError',
        },
        { route: 'remarks', body: { id: remarkId }, fits: remarkIdFits(remarkId), refusal: 'InvalidCounterIdError' },
        {
          route: 'remarks',
          body: { id: `no-such-remark-${prefix}`, key },
          fits: keyFits(key),
          refusal: 'InvalidIdempotencyKeyError',
        },
      );
    }
    const countRows = async () =>
      Promise.all([
        dataSource.getRepository(Article).count(),
        dataSource.getRepository(Remark).count(),
        dataSource.getRepository(CounterLedgerEntry).count(),
      ]);
    const redisBefore = await snapshot(redis, prefix);
    const rowsBefore = await countRows();
    const databaseBefore = await storedArticles();

    const unexpected: unknown[] = [];
    for (const { route, body, fits, refusal } of cases) {
      const response = await request(app.getHttpServer()).post(`/changes/${route}`).send(body);
      const expected = fits ? [404, 'CounterRowNotFoundError'] : [400, refusal];
      // The library's own words, never a driver's: "Remark ids must …", "An idempotency key must …".
      const words = fits
        ? `${entityOf[route]} with id`
        : refusal === 'InvalidCounterIdError'
          ? `${entityOf[route]} ids must`
          : 'An idempotency key must';
      const { status, body: answer } = response as { status: number; body: { code?: string; message?: string } };
      if (status !== expected[0] || answer.code !== expected[1] || !answer.message?.startsWith(words)) {
        unexpected.push({ route, body: JSON.stringify(body).slice(0, 120), expected, got: answer });
      }
    }
    expect(unexpected, `seed ${seed} (COUNTER_TEST_SEED replays it)`).toEqual([]);
    // The seed tried each kind of input: lone surrogates, NUL, 10,000 characters, and strings that fit.
    const tried = (test: (text: string) => boolean) => cases.some(({ body }) => test(body.key ?? body.id));
    expect([
      tried((text) => !isWellFormed(text)),
      tried((text) => text.includes('\u0000')),
      tried((text) => text.length === 10_000),
      cases.some(({ fits }) => fits),
    ]).toEqual([true, true, true, true]);
    expect(await snapshot(redis, prefix)).toEqual(redisBefore);
    expect(await countRows()).toEqual(rowsBefore);
    expect(await storedArticles()).toEqual(databaseBefore);
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
    controllers: [ArticleLikesController, CounterChangesController, ArticleRecountController],
    providers: [{ provide: APP_FILTER, useClass: CounterExceptionFilter }],
  });
}
