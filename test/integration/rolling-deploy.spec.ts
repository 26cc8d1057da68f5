import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { DATABASES } from '../../support/databases.js';
import { Article, ArticleBeforeViewCount } from '../fixtures/entities.js';
import { articleCounts, insertArticles } from '../../support/rows.js';

const OPTIONS = { shards: 1, cleanRowTtlSeconds: 2, flushOnShutdown: false, flushLeaseMs: 500 };
/** How long changes of a counter no claiming instance knows are kept after the last give-back. */
const WEEK_MS = 7 * 24 * 3_600_000;

// While a deployment rolls out, an instance that runs the code from before a counter was added may
// claim a batch that holds changes of that counter: it must leave them for an instance that knows it.
describe.each(DATABASES)('a flusher deployed before a counter was added, on %s', (database) => {
  const suite = useCounterSuite(database, 'deploy', OPTIONS);
  let newer: CounterApp;
  let older: CounterApp;
  beforeAll(async () => {
    newer = suite.counter;
    older = await startCounterApp({
      database: suite.database.options,
      keyPrefix: suite.prefix,
      synchronize: false,
      entities: [ArticleBeforeViewCount],
      counter: OPTIONS,
    });
  });
  afterAll(() => older?.close());
  afterEach(() => vi.restoreAllMocks());

  const shard = () => new CounterKeys(suite.prefix, 1).shard(newer.dataSource.getMetadata(Article).tablePath, 0);

  it('gives the changes of the counter back, counts them in loads, and leaves them to an instance that knows it', async () => {
    const [id] = await insertArticles(newer.dataSource, [10]);
    expect(await newer.counters.increment(Article, id, 'view_count', 4)).toBe(4);
    expect(await newer.counters.increment(Article, id, 'like_count', 1)).toBe(11);

    const report = await older.counters.flush();
    expect(report.error).toBeUndefined();
    expect([report.batches, report.rows]).toEqual([1, 1]);
    expect((await articleCounts(newer.dataSource, [id])).get(id)).toEqual({ likes: 11, views: 0 });
    expect(await suite.redis.hgetall(shard().unknown)).toEqual({
      [`${id} view_count`]: '4',
      '#at': expect.stringMatching(/^\d+$/),
    });
    // Without a TTL: a Redis that evicts keys with one (volatile-*) keeps it.
    expect(await suite.redis.pttl(shard().unknown)).toBe(-1);

    // A row loaded again (its cache gone) counts the change given back.
    await suite.redis.del(shard().row(String(id)));
    expect(await newer.counters.getMany(Article, [id])).toEqual(new Map([[id, { like_count: 11, view_count: 4 }]]));

    // The next claim of the shard by an instance that knows view_count writes it.
    expect(await newer.counters.increment(Article, id, 'like_count', 1)).toBe(12);
    const next = await newer.counters.flush();
    expect(next.error).toBeUndefined();
    expect((await articleCounts(newer.dataSource, [id])).get(id)).toEqual({ likes: 12, views: 4 });
    expect(await suite.redis.exists(shard().unknown)).toBe(0);
    expect(await newer.counters.get(Article, id, 'view_count')).toBe(4);
  });

  it("leaves nothing behind when it claims a shard in parts: the shard's last claim takes what is left", async () => {
    // Claims of one row each: the first two pop a row from the dirty set, leaving its view_count change in the
    // pending hash (the row is no longer dirty, and a later change of it does not make it so); the last claim
    // takes the whole pending hash, those changes included, and gives them back. So an older instance delays
    // them at most until the shard's backlog is down to flushBatchSize rows, and loses none.
    const partial = await startCounterApp({
      database: suite.database.options,
      keyPrefix: suite.prefix,
      synchronize: false,
      entities: [ArticleBeforeViewCount],
      counter: { ...OPTIONS, flushBatchSize: 1 },
    });
    try {
      const ids = await insertArticles(newer.dataSource, [0, 0, 0]);
      for (const id of ids) {
        await newer.counters.increment(Article, id, 'view_count', 3);
        await newer.counters.increment(Article, id, 'like_count', 1);
      }
      const report = await partial.counters.flush();
      expect([report.error, report.batches, report.rows]).toEqual([undefined, 3, 3]);
      const givenBack = Object.keys(await suite.redis.hgetall(shard().unknown)).filter(
        (field) => !field.startsWith('#'),
      );
      expect(givenBack.sort()).toEqual(ids.map((id) => `${id} view_count`).sort());
      expect(await newer.counters.increment(Article, ids[0], 'view_count', 1)).toBe(4);
      expect((await newer.counters.flush()).error).toBeUndefined();
      expect(await articleCounts(newer.dataSource, ids)).toEqual(
        new Map(ids.map((id, i) => [id, { likes: 1, views: i === 0 ? 4 : 3 }])),
      );
    } finally {
      await partial.close();
    }
  });

  it('keeps them while none of its instances knows the counter, and drops them a week after the last give-back', async () => {
    const [id] = await insertArticles(newer.dataSource, [0]);
    expect(await newer.counters.increment(Article, id, 'view_count', 5)).toBe(5);
    expect((await older.counters.flush()).error).toBeUndefined();
    // A claim by an instance that does not know the counter either keeps them.
    expect(await older.counters.increment(ArticleBeforeViewCount, id, 'like_count', 1)).toBe(1);
    expect((await older.counters.flush()).error).toBeUndefined();
    expect(await suite.redis.hget(shard().unknown, `${id} view_count`)).toBe('5');

    // A week (UNKNOWN_CHANGES_KEPT_MS, restated) after the last give-back, such a claim drops them: the
    // counter was removed, as far as the shard can tell. The give-back's time is set back to stand for it.
    const [seconds] = await suite.redis.time();
    await suite.redis.hset(shard().unknown, '#at', String(Number(seconds) * 1000 - WEEK_MS));
    expect(await older.counters.increment(ArticleBeforeViewCount, id, 'like_count', 1)).toBe(2);
    expect((await older.counters.flush()).error).toBeUndefined();
    expect(await suite.redis.exists(shard().unknown)).toBe(0);
    expect((await newer.counters.flush()).batches).toBe(0);
    expect((await articleCounts(newer.dataSource, [id])).get(id)).toEqual({ likes: 2, views: 0 });
  });

  it('gives nothing back from a batch it recovers that the ledger has: its writer wrote it whole', async () => {
    const [id] = await insertArticles(newer.dataSource, [0]);
    expect(await newer.counters.increment(Article, id, 'view_count', 6)).toBe(6);
    expect(await newer.counters.increment(Article, id, 'like_count', 2)).toBe(2);
    // The newer instance writes the batch (both counters) and dies before its ack.
    vi.spyOn(newer.app.get(FlushStore), 'ack').mockRejectedValue(new Error('crashed before the ack'));
    vi.spyOn(newer.app.get(FlushStore), 'release').mockRejectedValue(new Error('crashed'));
    expect((await newer.counters.flush()).error?.message).toBe('crashed before the ack');
    vi.restoreAllMocks();
    expect((await articleCounts(newer.dataSource, [id])).get(id)).toEqual({ likes: 2, views: 6 });

    // Once the lease has expired the older instance recovers it: in the ledger, so acknowledged only.
    await expect
      .poll(async () => (await older.counters.flush()).recoveredBatches, { timeout: 5_000, interval: 100 })
      .toBe(1);
    expect(await suite.redis.exists(shard().unknown)).toBe(0);
    expect((await newer.counters.flush()).batches).toBe(0);
    expect((await articleCounts(newer.dataSource, [id])).get(id)).toEqual({ likes: 2, views: 6 });
  });
});
