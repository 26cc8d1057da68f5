import { describe, expect, it } from 'vitest';
import { CounterLedgerEntry, CounterOutOfRangeError, type FlushReport } from '../../lib/index.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { Article, Remark } from '../fixtures/entities.js';
import { articleCounts, insertArticles, insertRemarks, remarkCounts } from '../../support/rows.js';
import { seededRandom, testSeed } from '../../support/seeded-random.js';
import { TARGETS } from '../support/topologies.js';

const INSTANCES = 3;
const ROWS_PER_ENTITY = 250;
const OPERATIONS = 20_000;
const CALLERS = 100;

// G1: after any interleaving of increments, decrements and concurrent flushes from several instances,
// every database counter equals its start value plus the sum of the acknowledged deltas.
describe.each(TARGETS)('exactly-once under concurrency on %s, %s', (database, topology) => {
  const { apps, prefix } = useCounterSuite({ database, topology }, 'g1', { flushBatchSize: 40 }, INSTANCES);

  it('20,000 mixed changes from 100 callers over 500 rows, three instances flushing throughout', async () => {
    const seed = testSeed();
    const random = seededRandom(seed);
    const { dataSource } = apps[0];
    const articleIds = await insertArticles(
      dataSource,
      Array.from({ length: ROWS_PER_ENTITY }, (_, i) => i % 7),
    );
    const remarkIds = await insertRemarks(
      dataSource,
      Array.from({ length: ROWS_PER_ENTITY }, (_, i) => i % 5),
      prefix,
    );
    const startArticles = await articleCounts(dataSource, articleIds);
    const startRemarks = await remarkCounts(dataSource, remarkIds);

    const expectedLikes = new Map(articleIds.map((id) => [id, startArticles.get(id)!.likes]));
    const expectedViews = new Map(articleIds.map((id) => [id, startArticles.get(id)!.views]));
    const expectedReplies = new Map(remarkIds.map((id) => [id, startRemarks.get(id)!]));
    let acknowledged = 0;
    let refused = 0;

    let calling = true;
    const reports: FlushReport[] = [];
    const flushers = apps.map(async (app) => {
      while (calling) {
        reports.push(await app.counters.flush());
        await new Promise((resolve) => setTimeout(resolve, random() * 20));
      }
    });

    let remaining = OPERATIONS;
    const caller = async () => {
      while (remaining > 0) {
        remaining--;
        const app = apps[Math.floor(random() * INSTANCES)];
        const delta = 1 + Math.floor(random() * 5);
        const negative = random() < 0.4;
        const pick = random();
        try {
          if (pick < 0.4) {
            const id = articleIds[Math.floor(random() * articleIds.length)];
            await (negative
              ? app.counters.decrement(Article, id, 'like_count', delta)
              : app.counters.increment(Article, id, 'like_count', delta));
            expectedLikes.set(id, expectedLikes.get(id)! + (negative ? -delta : delta));
          } else if (pick < 0.7) {
            const id = articleIds[Math.floor(random() * articleIds.length)];
            await app.counters.increment(Article, id, 'view_count', negative ? -delta : delta);
            expectedViews.set(id, expectedViews.get(id)! + (negative ? -delta : delta));
          } else {
            const id = remarkIds[Math.floor(random() * remarkIds.length)];
            await app.counters.increment(Remark, id, 'reply_count', negative ? -delta : delta);
            expectedReplies.set(id, expectedReplies.get(id)! + (negative ? -delta : delta));
          }
          acknowledged++;
        } catch (error) {
          // like_count and reply_count are bounded at 0: a refused change is not acknowledged.
          if (!(error instanceof CounterOutOfRangeError)) throw error;
          refused++;
        }
      }
    };
    await Promise.all(Array.from({ length: CALLERS }, caller));
    calling = false;
    await Promise.all(flushers);
    for (const app of apps) reports.push(await app.counters.flush());

    const failed = reports.filter((report) => report.error);
    expect(
      failed.map((report) => report.error?.message),
      `seed ${seed}`,
    ).toEqual([]);
    expect(acknowledged + refused).toBe(OPERATIONS);

    const finalArticles = await articleCounts(dataSource, articleIds);
    const finalRemarks = await remarkCounts(dataSource, remarkIds);
    const wrong: string[] = [];
    for (const id of articleIds) {
      const row = finalArticles.get(id)!;
      if (row.likes !== expectedLikes.get(id))
        wrong.push(`article ${id} likes ${row.likes} != ${expectedLikes.get(id)}`);
      if (row.views !== expectedViews.get(id))
        wrong.push(`article ${id} views ${row.views} != ${expectedViews.get(id)}`);
    }
    for (const id of remarkIds) {
      if (finalRemarks.get(id) !== expectedReplies.get(id)) {
        wrong.push(`remark ${id} replies ${finalRemarks.get(id)} != ${expectedReplies.get(id)}`);
      }
    }
    expect(wrong, `seed ${seed}`).toEqual([]);

    // Live values agree with the database once everything is flushed.
    const live = await apps[1].counters.getMany(Article, articleIds);
    expect(articleIds.filter((id) => live.get(id)!.like_count !== expectedLikes.get(id))).toEqual([]);

    // Every applied batch left exactly one ledger row.
    const batches = reports.reduce((sum, report) => sum + report.batches, 0);
    expect(await dataSource.getRepository(CounterLedgerEntry).count()).toBe(batches);
    expect(batches).toBeGreaterThan(INSTANCES);
  });
});
