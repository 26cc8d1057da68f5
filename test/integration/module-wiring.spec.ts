import { Logger, type INestApplication } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  CounterConfigurationError,
  CounterLedgerEntry,
  CounterModule,
  CounterService,
  InvalidCounterDefinitionError,
  type CounterModuleOptions,
} from '../../lib/index.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { CounterRedisHandle } from '../../lib/redis/counter-redis.handle.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { Article, Badge, ENTITIES, Remark } from '../fixtures/entities.js';
import {
  CompositeKeyCounter,
  DuplicateCounter,
  LongWindowedNameCounter,
  MinuteWindowCounter,
  NotAColumnCounter,
  VarcharCounter,
} from '../fixtures/invalid-entities.js';
import { WINDOWED_ENTITIES } from '../fixtures/windowed-entities.js';
import { NestHarness, type HarnessAppOptions } from '../support/nest-harness.js';
import { deleteKeys, REDIS_URL, RESP2, scanKeys, testRedis, uniquePrefix } from '../../support/redis.js';

const SHARDS = 8;
const COUNTED = [...ENTITIES, CounterLedgerEntry];

/** Polls `read` until it returns `expected` or the deadline passes; returns the last value read. */
async function eventually<T>(read: () => Promise<T>, expected: T, deadlineMs: number): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let value = await read();
  while (JSON.stringify(value) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

/** The error a bootstrap fails with, and how long it took. */
async function bootstrapError(start: () => Promise<INestApplication>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await start();
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  return { error: undefined, ms: Date.now() - started };
}

// How an application wires the module: async options, whose Redis client is closed, the final and the
// scheduled flush, and bootstrap refusing definitions and configurations that cannot work.
describe.each(DATABASES)('module wiring on %s', (databaseName) => {
  const redis = testRedis();
  const harness = new NestHarness();
  const prefixes: string[] = [];
  const clients: Redis[] = [];
  let database: TestDatabase;
  /** A connection of its own, to read what really reached the database. */
  let reader: DataSource;
  /** A client lent to the applications whose bootstrap is expected to fail. */
  let spare: Redis;

  const newPrefix = (label: string) => {
    const prefix = uniquePrefix(label);
    prefixes.push(prefix);
    return prefix;
  };
  const newClient = () => {
    const client = new Redis(REDIS_URL, RESP2);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    // Creates the tables once.
    const app = await harness.start({
      database: database.options,
      entities: COUNTED,
      imports: [CounterModule.forRoot({ redis, keyPrefix: newPrefix('wiring-setup'), flushEnabled: false })],
    });
    await harness.close(app);
    reader = await new DataSource({
      ...database.options,
      entities: COUNTED,
      synchronize: false,
      logging: false,
    }).initialize();
    spare = newClient();
  });

  afterAll(async () => {
    await harness.closeAll();
    if (reader?.isInitialized) await reader.destroy();
    await database?.drop();
    for (const prefix of prefixes) await deleteKeys(redis, prefix);
    for (const client of clients) client.disconnect();
    redis.disconnect();
  });

  const insertArticle = (likeCount: number, viewCount: number) =>
    reader.getRepository(Article).save(reader.getRepository(Article).create({ title: 'wiring', likeCount, viewCount }));
  const storedArticle = async (id: number) => {
    const row = await reader.getRepository(Article).findOneByOrFail({ id });
    return { likeCount: row.likeCount, viewCount: Number(row.viewCount) };
  };
  const startApp = (options: CounterModuleOptions, extra: NonNullable<HarnessAppOptions['imports']> = []) =>
    harness.start({
      database: database.options,
      entities: COUNTED,
      synchronize: false,
      imports: [...extra, CounterModule.forRoot(options)],
    });
  /** Waits until Redis no longer lists the connection with this id (the client's QUIT closes it). */
  const connectionClosed = async (id: number) =>
    eventually(async () => String(await redis.call('CLIENT', 'LIST', 'ID', String(id))), '', 2_000);

  it('takes its options from forRootAsync with ConfigModule and ConfigService', async () => {
    const prefix = newPrefix('wiring-async');
    const app = await harness.start({
      database: database.options,
      entities: COUNTED,
      synchronize: false,
      imports: [
        ConfigModule.forRoot({
          ignoreEnvFile: true,
          skipProcessEnv: true,
          load: [() => ({ REDIS_URL, COUNTER_KEY_PREFIX: prefix, COUNTER_SHARDS: 3 })],
        }),
        CounterModule.forRootAsync({
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({
            redis: config.get<string>('REDIS_URL'),
            keyPrefix: config.get<string>('COUNTER_KEY_PREFIX'),
            shards: config.get<number>('COUNTER_SHARDS'),
            flushEnabled: false,
          }),
        }),
      ],
    });
    const counters = app.get(CounterService);
    const article = await insertArticle(4, 40);
    expect(await counters.increment(Article, article.id, 'like_count', 3)).toBe(7);
    expect(await counters.get(Article, article.id, 'view_count')).toBe(40);

    // The keys carry the configured prefix and shard count.
    const keys = new CounterKeys(prefix, 3);
    const encoded = encodeURIComponent(String(article.id));
    const shard = keys.shard(reader.getMetadata(Article).tablePath, keys.shardOf(encoded));
    expect(await redis.hgetall(shard.row(encoded))).toEqual({ 'v:like_count': '7', 'v:view_count': '40' });
    // The pending hash holds the change, and the field that keeps it a hash table (wide-hash.lua.ts).
    expect(await redis.hgetall(shard.pending)).toEqual({ [`${encoded} like_count`]: '3', '#wide': '-'.repeat(65) });
    expect(await redis.zrange(shard.dirty, '0', '-1')).toEqual([encoded]);
    // Besides the row, its shard's pending hash and dirty set: one generation key per shard of each
    // entity, marked at bootstrap.
    const generations = [Article, Remark, Badge].flatMap((entity) =>
      keys.shardsOf(reader.getMetadata(entity).tablePath).map((each) => each.generation),
    );
    expect((await scanKeys(redis, prefix)).sort()).toEqual(
      [shard.dirty, shard.pending, shard.row(encoded), ...generations].sort(),
    );

    const handle = app.get(CounterRedisHandle);
    expect(handle.owned).toBe(true);
    const connection = Number(await (handle.client as Redis).call('CLIENT', 'ID'));
    await harness.close(app);
    expect(await connectionClosed(connection)).toBe('');
    expect(await eventually(async () => handle.client.status, 'end', 2_000)).toBe('end');
    expect(await storedArticle(article.id)).toEqual({ likeCount: 7, viewCount: 40 });
  });

  it('never closes a Redis client the application supplied', async () => {
    const own = newClient();
    await own.ping();
    const app = await startApp({ redis: own, keyPrefix: newPrefix('wiring-own'), shards: SHARDS, flushEnabled: false });
    const article = await insertArticle(1, 1);
    expect(await app.get(CounterService).increment(Article, article.id, 'like_count')).toBe(2);
    expect(app.get(CounterRedisHandle).owned).toBe(false);

    await harness.close(app);
    expect(own.status).toBe('ready');
    expect(await own.ping()).toBe('PONG');
    expect(await storedArticle(article.id)).toEqual({ likeCount: 2, viewCount: 1 });
  });

  it.each([
    ['a redis:// URL', () => REDIS_URL],
    ['ioredis options', () => ({ host: '127.0.0.1', port: Number(new URL(REDIS_URL).port || 6379) })],
  ])('closes the Redis client it created from %s', async (_, redisConnection) => {
    const app = await startApp({
      redis: redisConnection(),
      keyPrefix: newPrefix('wiring-owned'),
      shards: SHARDS,
      flushEnabled: false,
    });
    const handle = app.get(CounterRedisHandle);
    const article = await insertArticle(0, 0);
    expect(await app.get(CounterService).increment(Article, article.id, 'view_count', 9)).toBe(9);
    expect(handle.owned).toBe(true);
    expect(handle.client.status).toBe('ready');
    const connection = Number(await (handle.client as Redis).call('CLIENT', 'ID'));

    await harness.close(app);
    expect(await connectionClosed(connection)).toBe('');
    expect(await eventually(async () => handle.client.status, 'end', 2_000)).toBe('end');
    expect(await storedArticle(article.id)).toEqual({ likeCount: 0, viewCount: 9 });
  });

  it('flushes pending counts into the database on app.close()', async () => {
    const prefix = newPrefix('wiring-close');
    const app = await startApp({ redis: newClient(), keyPrefix: prefix, shards: SHARDS, flushEnabled: false });
    const counters = app.get(CounterService);
    const first = await insertArticle(10, 100);
    const second = await insertArticle(20, 200);
    const remarkId = `close:{${prefix}}`;
    await reader.getRepository(Remark).save(reader.getRepository(Remark).create({ id: remarkId, replyCount: 5 }));

    await Promise.all(Array.from({ length: 25 }, () => counters.increment(Article, first.id, 'like_count')));
    expect(await counters.increment(Article, first.id, 'view_count', 1_000)).toBe(1_100);
    expect(await counters.decrement(Article, second.id, 'like_count', 7)).toBe(13);
    expect(await counters.increment(Remark, remarkId, 'reply_count', 40)).toBe(45);
    expect(await storedArticle(first.id)).toEqual({ likeCount: 10, viewCount: 100 });

    await harness.close(app);
    expect(await storedArticle(first.id)).toEqual({ likeCount: 35, viewCount: 1_100 });
    expect(await storedArticle(second.id)).toEqual({ likeCount: 13, viewCount: 200 });
    expect((await reader.getRepository(Remark).findOneByOrFail({ id: remarkId })).replyCount).toBe(45);
    // Nothing is left pending in Redis: the rows hold only their live values.
    const keys = new CounterKeys(prefix, SHARDS);
    const table = reader.getMetadata(Article).tablePath;
    const row = (id: number) => keys.shard(table, keys.shardOf(String(id))).row(String(id));
    expect(await redis.hgetall(row(first.id))).toEqual({ 'v:like_count': '35', 'v:view_count': '1100' });
    expect(await redis.hgetall(row(second.id))).toEqual({ 'v:like_count': '13', 'v:view_count': '200' });
  });

  it('flushes on a schedule registered in SchedulerRegistry when flushEnabled is true', async () => {
    const app = await startApp(
      {
        redis: newClient(),
        keyPrefix: newPrefix('wiring-cron'),
        shards: SHARDS,
        flushEnabled: true,
        flushIntervalMs: 200,
      },
      [ScheduleModule.forRoot()],
    );
    const schedulerRegistry = app.get(SchedulerRegistry);
    const jobs = schedulerRegistry.getIntervals().filter((name) => name.startsWith('counter:flush'));
    expect(jobs).toHaveLength(1);

    const counters = app.get(CounterService);
    const article = await insertArticle(3, 30);
    expect(await counters.increment(Article, article.id, 'like_count', 4)).toBe(7);
    expect(await counters.increment(Article, article.id, 'view_count', 5)).toBe(35);
    const started = Date.now();
    const stored = await eventually(() => storedArticle(article.id), { likeCount: 7, viewCount: 35 }, 3_000);
    expect(stored).toEqual({ likeCount: 7, viewCount: 35 });
    expect(Date.now() - started).toBeLessThan(3_000);

    // Later changes are picked up by later runs of the same timer.
    expect(await counters.decrement(Article, article.id, 'like_count', 2)).toBe(5);
    expect(await eventually(() => storedArticle(article.id), { likeCount: 5, viewCount: 35 }, 3_000)).toEqual({
      likeCount: 5,
      viewCount: 35,
    });

    await harness.close(app);
    expect(schedulerRegistry.doesExist('interval', jobs[0])).toBe(false);
  });

  describe('refuses an invalid @Counted() definition at bootstrap', () => {
    it.each([
      ['on a varchar column', VarcharCounter, ['VarcharCounter.score', 'integer column', "@Column('int')"]],
      [
        'on a property that is not a column',
        NotAColumnCounter,
        ['NotAColumnCounter.ghostCount', 'not a column', "@Column('int')"],
      ],
      ['with two counters of one name', DuplicateCounter, ['DuplicateCounter', '"hits" twice']],
      [
        'on an entity with a composite primary key',
        CompositeKeyCounter,
        ['CompositeKeyCounter', 'composite primary key of 2 columns', 'exactly one primary column'],
      ],
      [
        'with windows of a granularity it does not keep',
        MinuteWindowCounter,
        ['MinuteWindowCounter.plays', '["minute"]', "'hour' and/or 'day'"],
      ],
      [
        'with windows on a counter whose name its buckets cannot hold',
        LongWindowedNameCounter,
        ['LongWindowedNameCounter.ppp', 'at most 64 characters'],
      ],
    ] as const)('%s', async (_, entity, fragments) => {
      const { error, ms } = await bootstrapError(() =>
        harness.start({
          database: database.options,
          entities: [entity, CounterLedgerEntry],
          imports: [CounterModule.forRoot({ redis: spare, keyPrefix: newPrefix('wiring-bad'), flushEnabled: false })],
        }),
      );
      expect(error).toBeInstanceOf(InvalidCounterDefinitionError);
      expect((error as Error).name).toBe('InvalidCounterDefinitionError');
      for (const fragment of fragments) expect((error as Error).message).toContain(fragment);
      expect(ms).toBeLessThan(10_000);
    });
  });

  it("writes transactions of the database's default size, or of flushBatchSize where given", async () => {
    const byDefault = await startApp({ redis: spare, keyPrefix: newPrefix('wiring-batch'), flushEnabled: false });
    const given = await startApp({
      redis: spare,
      keyPrefix: newPrefix('wiring-batch'),
      flushEnabled: false,
      flushBatchSize: 7,
    });
    try {
      // SQLite runs one writer at a time, whatever a transaction's size: its transactions are larger.
      expect(byDefault.get(CounterDatabase).flushBatchSize).toBe(databaseName === 'sqlite' ? 8_000 : 1_000);
      expect(given.get(CounterDatabase).flushBatchSize).toBe(7);
    } finally {
      await harness.close(byDefault);
      await harness.close(given);
    }
  });

  describe('refuses a configuration that cannot work at bootstrap', () => {
    it('without CounterLedgerEntry in the data source', async () => {
      const { error } = await bootstrapError(() =>
        harness.start({
          database: database.options,
          entities: ENTITIES,
          synchronize: false,
          imports: [
            CounterModule.forRoot({ redis: spare, keyPrefix: newPrefix('wiring-ledger'), flushEnabled: false }),
          ],
        }),
      );
      expect(error).toBeInstanceOf(CounterConfigurationError);
      expect((error as Error).message).toContain('CounterLedgerEntry');
      expect((error as Error).message).toContain('entities');
    });

    it('with a windowed counter but without CounterBucket in the data source', async () => {
      const { error } = await bootstrapError(() =>
        harness.start({
          database: database.options,
          entities: [...WINDOWED_ENTITIES, CounterLedgerEntry],
          imports: [
            CounterModule.forRoot({ redis: spare, keyPrefix: newPrefix('wiring-buckets'), flushEnabled: false }),
          ],
        }),
      );
      expect(error).toBeInstanceOf(CounterConfigurationError);
      expect((error as Error).message).toContain('Post.view_count declares windows');
      expect((error as Error).message).toContain('CounterBucket');
    });

    it('with flushEnabled but without ScheduleModule.forRoot()', async () => {
      const { error } = await bootstrapError(() =>
        startApp({ redis: spare, keyPrefix: newPrefix('wiring-schedule'), flushEnabled: true }),
      );
      expect(error).toBeInstanceOf(CounterConfigurationError);
      expect((error as Error).message).toContain('ScheduleModule.forRoot()');
      expect((error as Error).message).toContain('flushEnabled: false');
    });

    it.each([
      ['shards: 0', { shards: 0 }, ['"shards"', 'a positive integer', 'got 0']],
      ['shards: 1.5', { shards: 1.5 }, ['"shards"', 'a positive integer', 'got 1.5']],
      ['slotsPerEntity: 0', { slotsPerEntity: 0 }, ['"slotsPerEntity"', 'a positive integer', 'got 0']],
      ['shards: 100000', { shards: 100_000 }, ['"shards"', 'at most 16384', 'got 100000']],
      ['flushIntervalMs: -1', { flushIntervalMs: -1 }, ['"flushIntervalMs"', 'a positive integer', 'got -1']],
      ['flushConcurrency: 0', { flushConcurrency: 0 }, ['"flushConcurrency"', 'a positive integer', 'got 0']],
      ['flushBatchSize: 0', { flushBatchSize: 0 }, ['"flushBatchSize"', 'a positive integer', 'got 0']],
      ['keyPrefix: "a{b}"', { keyPrefix: 'a{b}' }, ['"keyPrefix"', 'without "{" or "}"', 'got a{b}']],
      [
        'bucketRetentionMs: { hour: 60000 }',
        { bucketRetentionMs: { hour: 60_000 } },
        ['"bucketRetentionMs.hour"', 'at least one hour', 'got 60000'],
      ],
      [
        'bucketRetentionMs: { day: 1.5 }',
        { bucketRetentionMs: { day: 1.5 } },
        ['"bucketRetentionMs.day"', 'at least one day', 'got 1.5'],
      ],
    ] as const)('with the bad option %s', async (_, option, fragments) => {
      for (const start of [
        () => startApp({ redis: spare, keyPrefix: newPrefix('wiring-option'), flushEnabled: false, ...option }),
        () =>
          harness.start({
            database: database.options,
            entities: COUNTED,
            synchronize: false,
            imports: [
              CounterModule.forRootAsync({
                useFactory: async () => ({
                  redis: spare,
                  keyPrefix: newPrefix('wiring-option'),
                  flushEnabled: false,
                  ...option,
                }),
              }),
            ],
          }),
      ]) {
        const { error } = await bootstrapError(start);
        expect(error).toBeInstanceOf(CounterConfigurationError);
        for (const fragment of fragments) expect((error as Error).message).toContain(fragment);
      }
    });
  });

  it('leaves the lent client usable after the failed bootstraps', async () => {
    expect(spare.status).toBe('ready');
    expect(await spare.ping()).toBe('PONG');
  });
});

// A user-supplied client that could send a command after its caller was told it failed gets a warning
// naming the settings that prevent it; one set up like the module's own clients does not.
describe('user-supplied Redis client settings', () => {
  const harness = new NestHarness();
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
  });

  afterAll(async () => {
    await harness.closeAll();
    await database?.drop();
  });

  async function warningsFor(client: Redis): Promise<string[]> {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const prefix = uniquePrefix('replay');
    try {
      const app = await harness.start({
        database: database.options,
        entities: [...ENTITIES, CounterLedgerEntry],
        imports: [CounterModule.forRoot({ redis: client, keyPrefix: prefix, flushEnabled: false })],
      });
      await harness.close(app);
      return warn.mock.calls.map(([message]) => String(message));
    } finally {
      warn.mockRestore();
      // The shards' generation keys the app marked at bootstrap.
      await deleteKeys(client, prefix).catch(() => undefined);
      client.disconnect();
    }
  }

  it('warns about a client with ioredis defaults, naming the settings to use', async () => {
    const warnings = await warningsFor(new Redis(REDIS_URL));
    expect(warnings.filter((message) => message.includes('autoResendUnfulfilledCommands: false'))).toHaveLength(1);
    expect(warnings.join('\n')).toContain('enableOfflineQueue: false');
  });

  it('stays quiet for a client that can never replay a command', async () => {
    const warnings = await warningsFor(
      new Redis(REDIS_URL, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, socketTimeout: 1000 }),
    );
    expect(warnings.filter((message) => message.includes('resend'))).toEqual([]);
  });
});
