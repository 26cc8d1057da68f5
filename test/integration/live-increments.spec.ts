import { describe, expect, it } from 'vitest';
import { useCounterSuite } from '../support/counter-suite.js';
import { Article, Badge, Remark } from '../fixtures/entities.js';
import { TARGETS } from '../support/topologies.js';

// G2: increment resolves with the new value; N concurrent increments by 1 resolve with v+1 … v+N once each.
describe.each(TARGETS)('live increments on %s, %s', (database, topology) => {
  const suite = useCounterSuite({ database, topology }, 'g2');

  const insertArticle = (likeCount: number) =>
    suite.counter.dataSource.getRepository(Article).save({ title: 'a', likeCount, viewCount: 0 });

  async function expectConsecutive(id: number, start: number, n: number) {
    const results = await Promise.all(
      Array.from({ length: n }, () => suite.counter.counters.increment(Article, id, 'like_count')),
    );
    expect([...results].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => start + i + 1));
    expect(await suite.counter.counters.get(Article, id, 'like_count')).toBe(start + n);
  }

  it('resolves 1,000 concurrent increments of an unseeded row with v+1 … v+1000, once each', async () => {
    const article = await insertArticle(41);
    await expectConsecutive(article.id, 41, 1000);
  });

  it('resolves 1,000 concurrent increments of a seeded row with v+1 … v+1000, once each', async () => {
    const article = await insertArticle(7);
    expect(await suite.counter.counters.get(Article, article.id, 'like_count')).toBe(7);
    await expectConsecutive(article.id, 7, 1000);
  });

  it('returns the new value and reads it back before and after a flush', async () => {
    const article = await insertArticle(10);
    expect(await suite.counter.counters.increment(Article, article.id, 'like_count', 5)).toBe(15);
    expect(await suite.counter.counters.decrement(Article, article.id, 'like_count', 2)).toBe(13);
    expect(await suite.counter.counters.increment(Article, String(article.id), 'view_count', 3)).toBe(3);
    expect(await suite.counter.counters.getMany(Article, [article.id])).toEqual(
      new Map([[article.id, { like_count: 13, view_count: 3 }]]),
    );
    const report = await suite.counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report.rows).toBeGreaterThanOrEqual(1);
    const stored = await suite.counter.dataSource.getRepository(Article).findOneByOrFail({ id: article.id });
    expect(stored.likeCount).toBe(13);
    expect(Number(stored.viewCount)).toBe(3);
    expect(await suite.counter.counters.get(Article, article.id, 'like_count')).toBe(13);
    expect(await suite.counter.counters.increment(Article, article.id, 'like_count')).toBe(14);
  });

  it('counts string ids that contain key syntax', async () => {
    const id = 'a{b}:c d/é';
    await suite.counter.dataSource.getRepository(Remark).save({ id, replyCount: 2 });
    expect(await suite.counter.counters.increment(Remark, id, 'reply_count', 3)).toBe(5);
    await suite.counter.counters.flush();
    const stored = await suite.counter.dataSource.getRepository(Remark).findOneByOrFail({ id });
    expect(stored.replyCount).toBe(5);
  });

  it('counts rows with UUID keys, whatever the case of the id given', async () => {
    const badges = suite.counter.dataSource.getRepository(Badge);
    const [first, second] = await badges.save([{ awardCount: 1 }, { awardCount: 2 }]);
    expect(await suite.counter.counters.increment(Badge, first.id, 'award_count', 4)).toBe(5);
    expect(await suite.counter.counters.increment(Badge, first.id.toUpperCase(), 'award_count')).toBe(6);
    expect(await suite.counter.counters.increment(Badge, second.id, 'award_count')).toBe(3);
    const report = await suite.counter.counters.flush();
    expect(report.error).toBeUndefined();
    const stored = new Map((await badges.find()).map((badge) => [badge.id, badge.awardCount]));
    expect([stored.get(first.id), stored.get(second.id)]).toEqual([6, 3]);
  });
});
