import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHANGES_PER_CALL } from '../../lib/counter.constants.js';
import { CounterOutOfRangeError } from '../../lib/index.js';
import { Article } from '../fixtures/entities.js';
import type { CounterApp } from '../support/counter-app.js';
import { mixedTurn, useIncrementSuite } from '../support/increment-suite.js';
import { TOPOLOGIES } from '../support/topologies.js';

// The increments requested in one turn of the event loop travel together, in few script calls (how many:
// performance-contract/increment-batching.performance.spec.ts). Batching must not change what each caller
// sees: every change is applied or refused on its own, in the order asked, as if each had been its own
// call (G2, G6, G5).
describe.each(TOPOLOGIES)('increments batched per turn of the event loop on %s', (topology) => {
  const suite = useIncrementSuite(topology, 'batch');
  const { redis, save, shardOf, rowKeyOf } = suite;
  let counter: CounterApp;
  beforeAll(() => void (counter = suite.counter));

  it('applies or refuses each change of one turn on its own, in the order asked', async () => {
    const [first, second] = await Promise.all([save(0, 10), save(3, 0)]);
    // Seeded first, so that this turn's changes all go out at once.
    await counter.counters.getMany(Article, [first.id, second.id]);
    const outcomes = await mixedTurn(counter, first, second);
    expect(
      outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : outcome.reason.constructor)),
    ).toEqual([CounterOutOfRangeError, 2, 5, 1, 14, 0, CounterOutOfRangeError, 1]);
    expect((outcomes[6] as PromiseRejectedResult).reason.message).toContain('like_count');

    expect(await counter.counters.getMany(Article, [first.id, second.id])).toEqual(
      new Map([
        [first.id, { like_count: 1, view_count: 14 }],
        [second.id, { like_count: 0, view_count: 5 }],
      ]),
    );
    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    const stored = await counter.dataSource.getRepository(Article).findBy({ title: 'batched' });
    const byId = new Map(stored.map((article) => [article.id, [article.likeCount, Number(article.viewCount)]]));
    expect(byId.get(first.id)).toEqual([1, 14]);
    expect(byId.get(second.id)).toEqual([0, 5]);
  });

  // Under load most rows of a call have one change each; the script takes those by a shorter path
  // (change_one) than a row's several changes, which must answer and write exactly the same.
  it("applies or refuses a row's lone change in a call of several rows, and marks the row dirty once", async () => {
    const MAX = Number.MAX_SAFE_INTEGER;
    const [atMin, plain, nearMax, unseeded] = await Promise.all([save(0, 0), save(5, 0), save(0, MAX - 1), save(2, 0)]);
    await counter.counters.getMany(Article, [atMin.id, plain.id, nearMax.id, unseeded.id]);
    await redis.del(rowKeyOf(unseeded.id));
    const outcomes = await Promise.allSettled([
      counter.counters.decrement(Article, atMin.id, 'like_count'), // 0 - 1 < min 0: refused
      counter.counters.increment(Article, plain.id, 'like_count', 2),
      counter.counters.increment(Article, nearMax.id, 'view_count'),
      counter.counters.increment(Article, unseeded.id, 'like_count', 3), // loaded from the database, then applied
    ]);
    expect(
      outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : outcome.reason.constructor)),
    ).toEqual([CounterOutOfRangeError, 7, MAX, 5]);
    expect((outcomes[0] as PromiseRejectedResult).reason.message).toContain('Article.like_count is 0');
    // The applied changes wait in their shards' pending hashes, their rows in the dirty sets; the
    // refused one left nothing.
    const pendingOf = (id: number, name: string) => redis.hget(shardOf(id).pending, `${id} ${name}`);
    expect(
      await Promise.all([
        pendingOf(atMin.id, 'like_count'),
        pendingOf(plain.id, 'like_count'),
        pendingOf(nearMax.id, 'view_count'),
        pendingOf(unseeded.id, 'like_count'),
      ]),
    ).toEqual([null, '2', '1', '3']);
    const dirtyScore = (id: number) => redis.zscore(shardOf(id).dirty, String(id));
    expect(await dirtyScore(atMin.id)).toBeNull();
    const firstDirty = await Promise.all([plain, nearMax, unseeded].map((article) => dirtyScore(article.id)));
    expect(firstDirty.every((score) => score !== null)).toBe(true);
    // A second lone change of the same counter neither marks the row again nor moves its time.
    await Promise.all([
      counter.counters.increment(Article, plain.id, 'like_count'),
      counter.counters.decrement(Article, nearMax.id, 'view_count'),
    ]);
    expect(await Promise.all([plain, nearMax].map((article) => dirtyScore(article.id)))).toEqual(
      firstDirty.slice(0, 2),
    );
    expect(await pendingOf(plain.id, 'like_count')).toBe('3');
    expect(await pendingOf(nearMax.id, 'view_count')).toBe('0');

    expect((await counter.counters.flush()).error).toBeUndefined();
    const stored = await counter.dataSource.getRepository(Article).findBy({ title: 'batched' });
    const byId = new Map(stored.map((article) => [article.id, [article.likeCount, Number(article.viewCount)]]));
    expect([atMin, plain, nearMax, unseeded].map((article) => byId.get(article.id))).toEqual([
      [0, 0],
      [8, 0],
      [0, MAX - 1],
      [5, 0],
    ]);
  });

  it('resolves more changes of one row than a call carries with v+1 … v+N, once each', async () => {
    const article = await save(100, 0);
    await counter.counters.get(Article, article.id, 'like_count');
    const n = 2 * MAX_CHANGES_PER_CALL + 7;
    const values = await Promise.all(
      Array.from({ length: n }, () => counter.counters.increment(Article, article.id, 'like_count')),
    );
    expect([...values].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => 101 + i));
    // Its shard's pending hash holds their sum.
    expect(await redis.hget(shardOf(article.id).pending, `${article.id} like_count`)).toBe(String(n));
    expect(await counter.counters.get(Article, article.id, 'like_count')).toBe(100 + n);
  });

  it('resolves more changes of one turn than are sent at once with v+1 … v+N, once each', async () => {
    const article = await save(0, 0);
    await counter.counters.get(Article, article.id, 'like_count');
    const n = 15 * MAX_CHANGES_PER_CALL;
    const values = await Promise.all(
      Array.from({ length: n }, () => counter.counters.increment(Article, article.id, 'like_count')),
    );
    expect([...values].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(await counter.counters.get(Article, article.id, 'like_count')).toBe(n);
  });

  it('answers changes of one call with exact values up to the safe integer limits, and unseeded rows with the generation', async () => {
    const MAX = Number.MAX_SAFE_INTEGER;
    // 10^14 - 1: the next value is the first that the script gives as digits instead of a Lua number.
    const [high, low, edge] = await Promise.all([save(0, MAX - 5), save(0, -(MAX - 5)), save(0, 10 ** 14 - 1)]);
    await counter.counters.getMany(Article, [high.id, low.id, edge.id]);
    const unseeded = await save(0, 0);
    await counter.counters.getMany(Article, [unseeded.id]);
    await redis.del(rowKeyOf(unseeded.id));
    const outcomes = await Promise.allSettled([
      counter.counters.increment(Article, high.id, 'view_count', 2),
      counter.counters.increment(Article, high.id, 'view_count', 3),
      counter.counters.increment(Article, high.id, 'view_count'), // past 2^53 - 1: refused
      counter.counters.decrement(Article, low.id, 'view_count', 5),
      counter.counters.increment(Article, edge.id, 'view_count'),
      counter.counters.decrement(Article, edge.id, 'view_count', 2 * 10 ** 14),
      counter.counters.increment(Article, unseeded.id, 'view_count', 4), // loaded from the database, then applied
    ]);
    expect(
      outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : outcome.reason.constructor)),
    ).toEqual([MAX - 3, MAX, CounterOutOfRangeError, -MAX, 10 ** 14, -(10 ** 14), 4]);
    expect((outcomes[2] as PromiseRejectedResult).reason.message).toContain(`Article.view_count is ${MAX}`);
    expect(await counter.counters.getMany(Article, [high.id, low.id, edge.id, unseeded.id])).toEqual(
      new Map([
        [high.id, { like_count: 0, view_count: MAX }],
        [low.id, { like_count: 0, view_count: -MAX }],
        [edge.id, { like_count: 0, view_count: -(10 ** 14) }],
        [unseeded.id, { like_count: 0, view_count: 4 }],
      ]),
    );
  });

  it('sends a lone change alone, declaring its row and its shard keys', async () => {
    const article = await save(7, 0);
    await counter.counters.get(Article, article.id, 'like_count');
    const from = suite.sentSoFar();
    expect(await counter.counters.increment(Article, article.id, 'like_count', 3)).toBe(10);
    const shard = shardOf(article.id);
    expect(suite.incrementCalls(from)).toEqual([
      expect.objectContaining({
        script: 'nestjsCounterIncrement',
        changes: 1,
        keys: [rowKeyOf(article.id), shard.pending, shard.dirty, shard.generation],
      }),
    ]);
  });
});
