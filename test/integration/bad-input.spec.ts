import type { INestApplication } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  CounterError,
  CounterLedgerEntry,
  CounterModule,
  CounterOutOfRangeError,
  CounterRowNotFoundError,
  CounterService,
  InvalidCounterDeltaError,
  InvalidCounterIdError,
  UnknownCountedEntityError,
  UnknownCounterError,
  type EntityClass,
} from '../../lib/index.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { Article, Badge, ENTITIES, Remark } from '../fixtures/entities.js';
import { NestHarness } from '../support/nest-harness.js';
import { deleteKeys, scanKeys, snapshot, uniquePrefix } from '../../support/redis.js';
import { counterRedisOption, inspectionClient, TARGETS } from '../support/topologies.js';
import { UncountedTag } from '../fixtures/uncounted-entities.js';

const MAX = Number.MAX_SAFE_INTEGER;
const BAD_DELTAS: unknown[] = [NaN, Infinity, -Infinity, 1.5, -0.5, 2 ** 53, -(2 ** 53), 'ten', '1', null];

/** Not a TypeORM entity at all. */
class NotAnEntity {
  id = 1;
  likeCount = 0;
}

// G6: bad input is refused with a typed error and a clear message, and nothing is written anywhere.
describe.each(TARGETS)('bad input on %s, %s', (databaseName, topology) => {
  const prefix = uniquePrefix('g6');
  const redis = inspectionClient(topology);
  const harness = new NestHarness();
  let database: TestDatabase;
  let app: INestApplication;
  let counters: CounterService;
  let dataSource: DataSource;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    app = await harness.start({
      database: database.options,
      entities: [...ENTITIES, UncountedTag, CounterLedgerEntry],
      imports: [
        CounterModule.forRoot({
          redis: counterRedisOption(topology),
          keyPrefix: prefix,
          shards: 8,
          flushEnabled: false,
        }),
      ],
    });
    counters = app.get(CounterService);
    dataSource = app.get(DataSource);
  });

  afterAll(async () => {
    await harness.closeAll();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  afterEach(() => vi.restoreAllMocks());

  const articles = () => dataSource.getRepository(Article);
  const remarks = () => dataSource.getRepository(Remark);
  const insertArticle = (likeCount: number, viewCount: number) =>
    articles().save(articles().create({ title: 'g6', likeCount, viewCount }));
  const insertRemark = (id: string, replyCount: number) => remarks().save(remarks().create({ id, replyCount }));

  /** Every row the tests can touch, read back from the database. */
  async function databaseRows() {
    const [articleRows, remarkRows, tags, ledger] = await Promise.all([
      articles().find({ order: { id: 'ASC' } }),
      remarks().find({ order: { id: 'ASC' } }),
      dataSource.getRepository(UncountedTag).find({ order: { id: 'ASC' } }),
      dataSource.getRepository(CounterLedgerEntry).count(),
    ]);
    return {
      articles: articleRows.map(({ id, likeCount, viewCount }) => [id, likeCount, String(viewCount)]),
      remarks: remarkRows.map(({ id, replyCount }) => [id, replyCount]),
      tags: tags.map(({ id, uses }) => [id, uses]),
      ledger,
    };
  }

  /**
   * Runs `action`, expects it to fail with `errorClass` and a message containing `fragments`, and nothing
   * written; returns the error.
   */
  async function expectRefused<E extends CounterError>(
    action: () => Promise<unknown>,
    errorClass: abstract new (...args: never[]) => E,
    fragments: string[],
  ): Promise<E> {
    const redisBefore = await snapshot(redis, prefix);
    const databaseBefore = await databaseRows();
    let caught: unknown;
    let result: unknown;
    try {
      result = await action();
    } catch (error) {
      caught = error;
    }
    expect(result).toBeUndefined();
    expect(caught).toBeInstanceOf(errorClass);
    expect(caught).toBeInstanceOf(CounterError);
    expect((caught as Error).name).toBe(errorClass.name);
    for (const fragment of fragments) expect((caught as Error).message).toContain(fragment);
    expect(await snapshot(redis, prefix)).toEqual(redisBefore);
    expect(await databaseRows()).toEqual(databaseBefore);
    return caught as E;
  }

  describe('unknown entity', () => {
    const entities: Array<[string, EntityClass]> = [
      ['a class that is not an entity', NotAnEntity],
      ['a TypeORM entity without counters', UncountedTag],
    ];
    it.each(entities)('refuses %s', async (_, entity) => {
      const article = await insertArticle(1, 1);
      const name = entity.name;
      const fragments = [name, '@Counted()'];
      const refused = await expectRefused(
        () => counters.increment(entity, article.id, 'like_count'),
        UnknownCountedEntityError,
        fragments,
      );
      expect(refused.entity).toBe(name);
      await expectRefused(
        () => counters.decrement(entity, article.id, 'like_count'),
        UnknownCountedEntityError,
        fragments,
      );
      await expectRefused(() => counters.get(entity, article.id, 'like_count'), UnknownCountedEntityError, fragments);
      await expectRefused(() => counters.getMany(entity, [article.id]), UnknownCountedEntityError, fragments);
    });
  });

  it('refuses an unknown counter name, naming the known ones', async () => {
    const article = await insertArticle(1, 1);
    for (const name of ['likes', 'likeCount', '']) {
      const fragments = [`"${name}"`, 'like_count, view_count'];
      await expectRefused(() => counters.increment(Article, article.id, name), UnknownCounterError, fragments);
      await expectRefused(() => counters.decrement(Article, article.id, name), UnknownCounterError, fragments);
      await expectRefused(() => counters.get(Article, article.id, name), UnknownCounterError, fragments);
      await expectRefused(
        () => counters.getMany(Article, [article.id], ['like_count', name]),
        UnknownCounterError,
        fragments,
      );
    }
    const refused = await expectRefused(() => counters.increment(Remark, 'r', 'like_count'), UnknownCounterError, [
      '"like_count"',
      'reply_count',
    ]);
    expect([refused.entity, refused.counter]).toEqual(['Remark', 'like_count']);
  });

  it("refuses an id outside its primary column's type before any query", async () => {
    // Article's id is an int: 32 bits on PostgreSQL and MariaDB; SQLite's integers are 64 bits.
    const ids =
      databaseName === 'sqlite' ? ['9223372036854775808', '-9223372036854775809'] : [2_147_483_648, -2_147_483_649];
    for (const id of ids) {
      const fragments = [`got ${typeof id === 'string' ? `"${id}"` : id}`, "the range of its primary column's type"];
      const refused = await expectRefused(
        () => counters.increment(Article, id, 'like_count'),
        InvalidCounterIdError,
        fragments,
      );
      expect([refused.entity, refused.id]).toEqual(['Article', id]);
      await expectRefused(() => counters.decrement(Article, id, 'like_count'), InvalidCounterIdError, fragments);
      await expectRefused(() => counters.get(Article, id, 'like_count'), InvalidCounterIdError, fragments);
      await expectRefused(() => counters.getMany(Article, [1, id]), InvalidCounterIdError, fragments);
    }
  });

  it.each(BAD_DELTAS.map((delta) => [String(delta), delta]))(
    'refuses the delta %s on increment and decrement, on a seeded and an unseeded row',
    async (text, delta) => {
      const seeded = await insertArticle(50, 50);
      expect(await counters.get(Article, seeded.id, 'like_count')).toBe(50);
      const unseeded = await insertArticle(60, 60);
      const fragments = ['safe integer', `got ${text}`];
      for (const id of [seeded.id, unseeded.id]) {
        for (const counter of ['like_count', 'view_count']) {
          await expectRefused(
            () => counters.increment(Article, id, counter, delta as number),
            InvalidCounterDeltaError,
            fragments,
          );
          await expectRefused(
            () => counters.decrement(Article, id, counter, delta as number),
            InvalidCounterDeltaError,
            fragments,
          );
        }
      }
      await expectRefused(
        () => counters.increment(Remark, 'any', 'reply_count', delta as number),
        InvalidCounterDeltaError,
        fragments,
      );
    },
  );

  /** like_count is an int column: 32 bits on PostgreSQL and MariaDB, 64 on SQLite. */
  const likeCountMax = () => (databaseName === 'sqlite' ? MAX : 2_147_483_647);

  it('refuses a value its integer column cannot hold, so no batch can fail in SQL', async () => {
    const article = await insertArticle(2_147_483_640, 0);
    expect(await counters.get(Article, article.id, 'like_count')).toBe(2_147_483_640);
    if (databaseName === 'sqlite') {
      expect(await counters.increment(Article, article.id, 'like_count', 10)).toBe(2_147_483_650);
    } else {
      await expectRefused(() => counters.increment(Article, article.id, 'like_count', 10), CounterOutOfRangeError, [
        'Article.like_count is 2147483640',
        '[0, 2147483647]',
      ]);
      expect(await counters.increment(Article, article.id, 'like_count', 7)).toBe(2_147_483_647);
    }
    expect((await counters.flush()).error).toBeUndefined();
    const stored = await articles().findOneByOrFail({ id: article.id });
    expect(stored.likeCount).toBe(databaseName === 'sqlite' ? 2_147_483_650 : 2_147_483_647);
  });

  it('refuses an id that is not a UUID for a UUID key', async () => {
    for (const id of ['abc', '123', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz']) {
      await expectRefused(() => counters.increment(Badge, id, 'award_count'), InvalidCounterIdError, [
        'Badge ids must be UUIDs',
      ]);
    }
  });

  it('refuses to go below min: 0 (like_count at 0, decrement)', async () => {
    const article = await insertArticle(0, 9);
    expect(await counters.get(Article, article.id, 'like_count')).toBe(0);
    const fragments = ['Article.like_count is 0', 'by -1', `[0, ${likeCountMax()}]`, 'nothing was changed'];
    const refused = await expectRefused(
      () => counters.decrement(Article, article.id, 'like_count'),
      CounterOutOfRangeError,
      fragments,
    );
    expect([refused.entity, refused.id, refused.counter]).toEqual(['Article', String(article.id), 'like_count']);
    await expectRefused(
      () => counters.increment(Article, article.id, 'like_count', -1),
      CounterOutOfRangeError,
      fragments,
    );
    expect(await counters.get(Article, article.id, 'like_count')).toBe(0);

    // At 2, taking 3 is refused whole; taking 2 is fine and lands exactly on the bound.
    expect(await counters.increment(Article, article.id, 'like_count', 2)).toBe(2);
    await expectRefused(() => counters.decrement(Article, article.id, 'like_count', 3), CounterOutOfRangeError, [
      'Article.like_count is 2',
      'by -3',
    ]);
    expect(await counters.decrement(Article, article.id, 'like_count', 2)).toBe(0);
  });

  it('refuses to go above max (Remark reply_count max 1,000,000)', async () => {
    const id = `near-max-${prefix}`;
    await insertRemark(id, 999_999);
    expect(await counters.get(Remark, id, 'reply_count')).toBe(999_999);
    await expectRefused(() => counters.increment(Remark, id, 'reply_count', 2), CounterOutOfRangeError, [
      'Remark.reply_count is 999999',
      'by 2',
      '[0, 1000000]',
    ]);
    expect(await counters.increment(Remark, id, 'reply_count')).toBe(1_000_000);
    await expectRefused(() => counters.increment(Remark, id, 'reply_count'), CounterOutOfRangeError, [
      'Remark.reply_count is 1000000',
      'by 1',
      '[0, 1000000]',
    ]);
    expect(await counters.get(Remark, id, 'reply_count')).toBe(1_000_000);
  });

  it('refuses to leave the safe integer range on a counter without declared bounds', async () => {
    const high = await insertArticle(0, MAX - 2);
    await counters.get(Article, high.id, 'view_count');
    for (const by of [3, 4, 1_000, MAX]) {
      await expectRefused(() => counters.increment(Article, high.id, 'view_count', by), CounterOutOfRangeError, [
        'Article.view_count is',
        `by ${by}`,
        `[${-MAX}, ${MAX}]`,
        'nothing was changed',
      ]);
    }
    const low = await insertArticle(0, -(MAX - 2));
    await counters.get(Article, low.id, 'view_count');
    for (const by of [3, MAX]) {
      await expectRefused(() => counters.decrement(Article, low.id, 'view_count', by), CounterOutOfRangeError, [
        'Article.view_count is',
        `by ${-by}`,
        `[${-MAX}, ${MAX}]`,
      ]);
    }
    expect(Number((await articles().findOneByOrFail({ id: high.id })).viewCount)).toBe(MAX - 2);
    expect(Number((await articles().findOneByOrFail({ id: low.id })).viewCount)).toBe(-(MAX - 2));
  });

  it('reports exact values next to the safe integer bound, and lets a change land exactly on it', async () => {
    const high = await insertArticle(0, MAX - 2);
    expect(await counters.get(Article, high.id, 'view_count')).toBe(MAX - 2);
    await expectRefused(() => counters.increment(Article, high.id, 'view_count', 3), CounterOutOfRangeError, [
      `Article.view_count is ${MAX - 2}`,
      'by 3',
    ]);
    expect(await counters.increment(Article, high.id, 'view_count', 2)).toBe(MAX);
    await expectRefused(() => counters.increment(Article, high.id, 'view_count'), CounterOutOfRangeError, [
      `Article.view_count is ${MAX}`,
      'by 1',
    ]);
    expect(await counters.get(Article, high.id, 'view_count')).toBe(MAX);
    expect(await counters.getMany(Article, [high.id])).toEqual(
      new Map([[high.id, { like_count: 0, view_count: MAX }]]),
    );

    const low = await insertArticle(0, -(MAX - 2));
    expect(await counters.get(Article, low.id, 'view_count')).toBe(-(MAX - 2));
    expect(await counters.decrement(Article, low.id, 'view_count', 2)).toBe(-MAX);
    await expectRefused(() => counters.decrement(Article, low.id, 'view_count'), CounterOutOfRangeError, [
      `Article.view_count is ${-MAX}`,
      'by -1',
    ]);
  });

  const badIds: Array<[string, EntityClass, unknown, string]> = [
    ['an empty id', Article, '', 'got ""'],
    ['an empty string id', Remark, '', 'got ""'],
    ['a null id', Article, null, 'got null'],
    ['a null string id', Remark, null, 'got null'],
    ['an undefined id', Article, undefined, 'got undefined'],
    ['an undefined string id', Remark, undefined, 'got undefined'],
    ['a non-integer text id', Article, 'abc', 'got "abc"'],
    ['a fractional id', Article, 1.5, 'got 1.5'],
    ['a fractional text id', Article, '1.5', 'got "1.5"'],
    ['a NaN id', Article, NaN, 'got NaN'],
  ];
  it.each(badIds)('refuses %s', async (_, entity, id, fragment) => {
    const expected = entity === Article ? 'Article ids must be integers' : 'Remark ids must be non-empty strings';
    const counter = entity === Article ? 'like_count' : 'reply_count';
    const badId = id as string | number;
    for (const action of [
      () => counters.increment(entity, badId, counter),
      () => counters.decrement(entity, badId, counter),
      () => counters.get(entity, badId, counter),
      () => counters.getMany(entity, [badId]),
    ]) {
      await expectRefused(action, InvalidCounterIdError, [expected, fragment]);
    }
  });

  const badStringIds: Array<[string, string, string]> = [
    ['a lone high surrogate', 'r\uD800x', 'got a string with a lone surrogate (half of a UTF-16 character) at index 1'],
    ['a lone low surrogate', 'ab\uDC00', 'got a string with a lone surrogate (half of a UTF-16 character) at index 2'],
    [
      'a surrogate pair reversed',
      '\uDE00\uD83D',
      'got a string with a lone surrogate (half of a UTF-16 character) at index 0',
    ],
    ['NUL', 'r\u0000x', 'got a string with a NUL character (U+0000) at index 1'],
    ['NUL alone', '\u0000', 'got a string with a NUL character (U+0000) at index 0'],
  ];
  it.each(badStringIds)('refuses a string id with %s, in its own words, before any query', async (_, id, got) => {
    const reads = vi.spyOn(app.get(CounterDatabase), 'readCounters');
    const fragments = ['Remark ids must be well-formed Unicode without NUL characters', got];
    for (const action of [
      () => counters.increment(Remark, id, 'reply_count'),
      () => counters.decrement(Remark, id, 'reply_count'),
      () => counters.change(Remark, id, 'reply_count', 1, { idempotencyKey: 'k' }),
      () => counters.get(Remark, id, 'reply_count'),
      () => counters.getMany(Remark, ['fine', id]),
      () => counters.set(Remark, id, 'reply_count', 3),
    ]) {
      await expectRefused(action, InvalidCounterIdError, fragments);
    }
    expect(reads).not.toHaveBeenCalled();
  });

  it("refuses a string id longer than its primary column's declared length (in characters)", async () => {
    // Remark's id is a varchar(64): PostgreSQL and MariaDB count characters, so 64 emoji fit.
    const reads = vi.spyOn(app.get(CounterDatabase), 'readCounters');
    for (const id of ['r'.repeat(65), '😀'.repeat(65), 'x'.repeat(10_000)]) {
      const fragments = [
        'Remark ids must be at most 64 characters, the length of its primary column; got a string of',
        `of ${[...id].length} characters.`,
      ];
      const refused = await expectRefused(
        () => counters.increment(Remark, id, 'reply_count'),
        InvalidCounterIdError,
        fragments,
      );
      expect([refused.entity, refused.id]).toEqual(['Remark', id]);
      await expectRefused(() => counters.get(Remark, id, 'reply_count'), InvalidCounterIdError, fragments);
    }
    expect(reads).not.toHaveBeenCalled();
    const longest = '😀'.repeat(64);
    await insertRemark(longest, 5);
    expect(await counters.increment(Remark, longest, 'reply_count')).toBe(6);
    expect((await counters.flush()).error).toBeUndefined();
    expect((await remarks().findOneByOrFail({ id: longest })).replyCount).toBe(6);
  });

  it('refuses a row that does not exist and writes nothing for it', async () => {
    const missingArticle = 2_000_000_000;
    const missingRemark = `missing:{${prefix}}`;
    for (const action of [
      () => counters.increment(Article, missingArticle, 'like_count'),
      () => counters.decrement(Article, missingArticle, 'view_count', 4),
      () => counters.get(Article, missingArticle, 'like_count'),
    ]) {
      const refused = await expectRefused(action, CounterRowNotFoundError, [
        `Article with id ${missingArticle} does not exist`,
      ]);
      expect([refused.entity, refused.id]).toEqual(['Article', String(missingArticle)]);
    }
    for (const action of [
      () => counters.increment(Remark, missingRemark, 'reply_count'),
      () => counters.get(Remark, missingRemark, 'reply_count'),
    ]) {
      const refused = await expectRefused(action, CounterRowNotFoundError, [
        `Remark with id ${missingRemark} does not exist`,
      ]);
      expect([refused.entity, refused.id]).toEqual(['Remark', missingRemark]);
    }
    const keys = await scanKeys(redis, prefix);
    expect(keys.filter((key) => key.endsWith(`:r:${missingArticle}`))).toEqual([]);
    expect(keys.filter((key) => key.endsWith(`:r:${encodeURIComponent(missingRemark)}`))).toEqual([]);
  });

  it('getMany with a bad id among good ones returns nothing and throws', async () => {
    const first = await insertArticle(1, 2);
    const second = await insertArticle(3, 4);
    for (const bad of ['abc', null, '', 2.5]) {
      await expectRefused(
        () => counters.getMany(Article, [first.id, bad as number, second.id]),
        InvalidCounterIdError,
        ['Article ids must be integers'],
      );
    }
    // The good ids alone are fine (and are only now seeded).
    expect(await counters.getMany(Article, [first.id, second.id])).toEqual(
      new Map([
        [first.id, { like_count: 1, view_count: 2 }],
        [second.id, { like_count: 3, view_count: 4 }],
      ]),
    );
  });
});
