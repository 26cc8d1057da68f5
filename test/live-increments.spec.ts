import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Article, Remark } from './support/entities.js';
import { startCounterApp, type CounterApp } from './support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from './support/databases.js';
import { deleteKeys, testRedis, uniquePrefix } from './support/redis.js';

// G2: increment resolves with the new value; N concurrent increments by 1 resolve with v+1 … v+N once each.
describe.each(DATABASES)('live increments on %s', (databaseName) => {
  const redis = testRedis();
  const prefix = uniquePrefix('g2');
  let database: TestDatabase;
  let counter: CounterApp;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    counter = await startCounterApp({ database: database.options, keyPrefix: prefix });
  });

  afterAll(async () => {
    await counter?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  const insertArticle = (likeCount: number) =>
    counter.dataSource.getRepository(Article).save({ title: 'a', likeCount, viewCount: 0 });

  async function expectConsecutive(id: number, start: number, n: number) {
    const results = await Promise.all(
      Array.from({ length: n }, () => counter.counters.increment(Article, id, 'like_count')),
    );
    expect([...results].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => start + i + 1));
    expect(await counter.counters.get(Article, id, 'like_count')).toBe(start + n);
  }

  it('resolves 1,000 concurrent increments of an unseeded row with v+1 … v+1000, once each', async () => {
    const article = await insertArticle(41);
    await expectConsecutive(article.id, 41, 1000);
  });

  it('resolves 1,000 concurrent increments of a seeded row with v+1 … v+1000, once each', async () => {
    const article = await insertArticle(7);
    expect(await counter.counters.get(Article, article.id, 'like_count')).toBe(7);
    await expectConsecutive(article.id, 7, 1000);
  });

  it('returns the new value and reads it back before and after a flush', async () => {
    const article = await insertArticle(10);
    expect(await counter.counters.increment(Article, article.id, 'like_count', 5)).toBe(15);
    expect(await counter.counters.decrement(Article, article.id, 'like_count', 2)).toBe(13);
    expect(await counter.counters.increment(Article, String(article.id), 'view_count', 3)).toBe(3);
    expect(await counter.counters.getMany(Article, [article.id])).toEqual(
      new Map([[article.id, { like_count: 13, view_count: 3 }]]),
    );
    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report.rows).toBeGreaterThanOrEqual(1);
    const stored = await counter.dataSource.getRepository(Article).findOneByOrFail({ id: article.id });
    expect(stored.likeCount).toBe(13);
    expect(Number(stored.viewCount)).toBe(3);
    expect(await counter.counters.get(Article, article.id, 'like_count')).toBe(13);
    expect(await counter.counters.increment(Article, article.id, 'like_count')).toBe(14);
  });

  it('counts string ids that contain key syntax', async () => {
    const id = 'a{b}:c d/é';
    await counter.dataSource.getRepository(Remark).save({ id, replyCount: 2 });
    expect(await counter.counters.increment(Remark, id, 'reply_count', 3)).toBe(5);
    await counter.counters.flush();
    const stored = await counter.dataSource.getRepository(Remark).findOneByOrFail({ id });
    expect(stored.replyCount).toBe(5);
  });
});
