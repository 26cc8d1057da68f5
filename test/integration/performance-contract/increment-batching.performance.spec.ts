import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHANGES_PER_CALL } from '../../../lib/counter.constants.js';
import { Article } from '../../fixtures/entities.js';
import type { CounterApp } from '../../support/counter-app.js';
import { mixedTurn, useIncrementSuite } from '../../support/increment-suite.js';
import { TOPOLOGIES } from '../../support/topologies.js';

// Performance contract: these tests pin the shape of an optimisation documented in docs/PERFORMANCE.md
// (increments batched per turn of the event loop), not a guarantee, and change when that optimisation does.
// The guarantees it must keep are proven by the specs in test/integration/.

// The increments requested in one turn of the event loop travel in one script call per slot, at most
// MAX_CHANGES_PER_CALL changes each; on a single Redis no more than ten calls' worth wait for a later turn.
describe.each(TOPOLOGIES)('increments batched per turn of the event loop on %s', (topology) => {
  const suite = useIncrementSuite(topology, 'batch-shape');
  const { redis, save, shardOf, rowKeyOf } = suite;
  let counter: CounterApp;
  beforeAll(() => void (counter = suite.counter));

  it('sends the changes of one turn in one script call per slot touched', async () => {
    const [first, second] = await Promise.all([save(0, 10), save(3, 0)]);
    // Seeded first, so that this turn's changes all go out at once.
    await counter.counters.getMany(Article, [first.id, second.id]);
    const from = suite.sentSoFar();
    const outcomes = await mixedTurn(counter, first, second);
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    // One call per slot touched: on a single Redis one for all eight changes.
    const slots = new Set([first, second].map((article) => shardOf(article.id).slot));
    const calls = suite.incrementCalls(from);
    expect(calls.reduce((sum, call) => sum + call.changes, 0)).toBe(8);
    expect(calls).toHaveLength(topology === 'standalone' ? 1 : slots.size);
  });

  it('sends keyed changes in the same calls as plain ones; only a row with a keyed change declares its record', async () => {
    const [plain, keyed] = await Promise.all([save(0, 0), save(0, 0)]);
    await counter.counters.getMany(Article, [plain.id, keyed.id]);
    const from = suite.sentSoFar();
    await Promise.all([
      counter.counters.increment(Article, plain.id, 'like_count'),
      counter.counters.increment(Article, keyed.id, 'like_count'),
      counter.counters.increment(Article, keyed.id, 'like_count', 1, { idempotencyKey: 'contract' }),
      counter.counters.increment(Article, plain.id, 'view_count'),
    ]);
    const calls = suite.incrementCalls(from);
    const slots = new Set([plain, keyed].map((article) => shardOf(article.id).slot));
    expect(calls).toHaveLength(topology === 'standalone' ? 1 : slots.size);
    expect(calls.reduce((sum, call) => sum + call.changes, 0)).toBe(4);
    const declared = calls.flatMap((call) => call.keys);
    expect(declared.filter((key) => key === shardOf(keyed.id).idempotency)).toHaveLength(1);
    expect(declared).toHaveLength(4 + 5);
  });

  it("sends a turn's changes together and an unseeded row's change again once its row is loaded", async () => {
    const MAX = Number.MAX_SAFE_INTEGER;
    const [high, low, edge] = await Promise.all([save(0, MAX - 5), save(0, -(MAX - 5)), save(0, 10 ** 14 - 1)]);
    await counter.counters.getMany(Article, [high.id, low.id, edge.id]);
    const unseeded = await save(0, 0);
    await counter.counters.getMany(Article, [unseeded.id]);
    await redis.del(rowKeyOf(unseeded.id));
    const from = suite.sentSoFar();
    await Promise.allSettled([
      counter.counters.increment(Article, high.id, 'view_count', 2),
      counter.counters.increment(Article, high.id, 'view_count', 3),
      counter.counters.increment(Article, high.id, 'view_count'), // refused in the script
      counter.counters.decrement(Article, low.id, 'view_count', 5),
      counter.counters.increment(Article, edge.id, 'view_count'),
      counter.counters.decrement(Article, edge.id, 'view_count', 2 * 10 ** 14),
      counter.counters.increment(Article, unseeded.id, 'view_count', 4),
    ]);
    // The seven went out together (on a single Redis in one call); the unseeded row's change
    // went again once its row was loaded.
    const calls = suite.incrementCalls(from);
    expect(calls.reduce((sum, call) => sum + call.changes, 0)).toBe(8);
    if (topology === 'standalone') {
      expect(calls.map(({ script, changes }) => [script, changes])).toEqual([
        ['nestjsCounterIncrement', 7],
        ['nestjsCounterIncrement', 1],
      ]);
    }
  });

  if (topology === 'standalone') {
    it("sends a row loaded on the way alone, after its turn's call of several rows", async () => {
      const MAX = Number.MAX_SAFE_INTEGER;
      const [atMin, plain, nearMax, unseeded] = await Promise.all([
        save(0, 0),
        save(5, 0),
        save(0, MAX - 1),
        save(2, 0),
      ]);
      await counter.counters.getMany(Article, [atMin.id, plain.id, nearMax.id, unseeded.id]);
      await redis.del(rowKeyOf(unseeded.id));
      const from = suite.sentSoFar();
      await Promise.allSettled([
        counter.counters.decrement(Article, atMin.id, 'like_count'), // refused in the script
        counter.counters.increment(Article, plain.id, 'like_count', 2),
        counter.counters.increment(Article, nearMax.id, 'view_count'),
        counter.counters.increment(Article, unseeded.id, 'like_count', 3),
      ]);
      expect(suite.incrementCalls(from).map(({ script, keys, changes }) => [script, keys.length, changes])).toEqual([
        ['nestjsCounterIncrement', 16, 4],
        ['nestjsCounterIncrement', 4, 1],
      ]);
    });
  }

  it(`sends at most ${MAX_CHANGES_PER_CALL} changes per call, a hot row's with one HINCRBY each`, async () => {
    const article = await save(100, 0);
    await counter.counters.get(Article, article.id, 'like_count');
    const from = suite.sentSoFar();
    const n = 2 * MAX_CHANGES_PER_CALL + 7;
    await Promise.all(Array.from({ length: n }, () => counter.counters.increment(Article, article.id, 'like_count')));
    expect(suite.incrementCalls(from).map((call) => call.changes)).toEqual([
      MAX_CHANGES_PER_CALL,
      MAX_CHANGES_PER_CALL,
      7,
    ]);
    // A hot row's changes in one call are written with one HINCRBY: its shard's pending hash holds their sum.
    expect(await redis.hget(shardOf(article.id).pending, `${article.id} like_count`)).toBe(String(n));
  });

  it("never leaves more than ten calls' worth of changes waiting for a later turn", async () => {
    const article = await save(0, 0);
    await counter.counters.get(Article, article.id, 'like_count');
    const from = suite.sentSoFar();
    const n = 15 * MAX_CHANGES_PER_CALL;
    const values = await Promise.all(
      Array.from({ length: n }, () => counter.counters.increment(Article, article.id, 'like_count')),
    );
    expect([...values].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const calls = suite.incrementCalls(from);
    expect(calls.map((call) => call.changes)).toEqual(Array(15).fill(MAX_CHANGES_PER_CALL));
    // Sent together in the first turn (one pipeline): on a single Redis the five calls' worth beyond the
    // ten allowed to wait; on a cluster everything, as one slot's calls.
    const firstPipeline = calls[0].command.pipeline;
    expect(firstPipeline).toBeDefined();
    const together = calls.filter((call) => call.command.pipeline === firstPipeline).length;
    expect(together).toBe(topology === 'standalone' ? 5 : 15);
  });
});
