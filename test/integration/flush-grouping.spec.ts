import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterDatabaseUnavailableError, CounterLedgerEntry } from '../../lib/index.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { QueryRunner } from 'typeorm';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import type { DeltaBatch } from '../../lib/model/delta-batch.js';
import type { FlushReport } from '../../lib/interfaces/index.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { deleteKeys, uniquePrefix } from '../../support/redis.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { DATABASES } from '../../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { dirtyEveryShard, expectEveryShardWritten } from '../support/every-shard-dirty.js';
import { articleCounts, insertArticles, spreadIds } from '../../support/rows.js';

const SHARDS = 4;

// A flush writes the batches of several shards (and entities) in one transaction, no more transactions at
// once than the database takes, and stays exact when one of them turns out to be in the ledger already.
describe.each(DATABASES)('batches of several shards in one transaction on %s', (database) => {
  const suite = useCounterSuite(database, 'group', { shards: SHARDS });
  const { prefix } = suite;
  let counter: CounterApp;
  beforeAll(() => void (counter = suite.counter));
  afterEach(() => vi.restoreAllMocks());

  const keys = new CounterKeys(prefix, SHARDS);
  const ledgerRows = () => counter.dataSource.getRepository(CounterLedgerEntry).count();
  const dirtyRows = (app: CounterApp = counter) => dirtyEveryShard(app, keys, prefix);

  /**
   * Runs `flushes` and returns the most batch transactions `app` had open at once: each transaction is
   * held open a moment, so a worker free to start another one meanwhile would.
   */
  async function mostOpenDuring(app: CounterApp, flushes: () => Promise<unknown>): Promise<number> {
    let open = 0;
    let mostOpen = 0;
    const watched = new WeakSet<QueryRunner>();
    const createRunner = app.dataSource.createQueryRunner.bind(app.dataSource);
    vi.spyOn(app.dataSource, 'createQueryRunner').mockImplementation((mode) => {
      const runner = createRunner(mode);
      if (watched.has(runner)) return runner;
      // SQLite's driver hands out one runner for every call: watch each runner once.
      watched.add(runner);
      const start = runner.startTransaction.bind(runner);
      const commit = runner.commitTransaction.bind(runner);
      const rollback = runner.rollbackTransaction.bind(runner);
      vi.spyOn(runner, 'startTransaction').mockImplementation(async (level) => {
        mostOpen = Math.max(mostOpen, ++open);
        await sleep(20);
        return start(level);
      });
      vi.spyOn(runner, 'commitTransaction').mockImplementation(() => commit().finally(() => open--));
      vi.spyOn(runner, 'rollbackTransaction').mockImplementation(() => rollback().finally(() => open--));
      return runner;
    });
    await flushes();
    expect(open).toBe(0);
    return mostOpen;
  }

  it('never runs more transactions at once than the database takes (one on SQLite)', async () => {
    const rows = await dirtyRows();
    let report: FlushReport | undefined;
    const mostOpen = await mostOpenDuring(counter, async () => void (report = await counter.counters.flush()));
    expect(report?.error).toBeUndefined();
    expect(report).toMatchObject({ batches: 2 * SHARDS, rows: 20, failedShards: 0 });
    // The default flushConcurrency (4) on PostgreSQL and MariaDB.
    expect(mostOpen).toBeGreaterThanOrEqual(1);
    expect(mostOpen).toBeLessThanOrEqual(database === 'sqlite' ? 1 : 4);
    await expectEveryShardWritten(counter, rows);
  });

  it('runs flushConcurrency transactions at once, over all flushes of the instance (one on SQLite)', async () => {
    const boundedPrefix = uniquePrefix('group-bounded');
    const bounded = await startCounterApp({
      database: suite.database.options,
      keyPrefix: boundedPrefix,
      synchronize: false,
      // Batches of one row: the two flushes' four workers all have transactions to run (with larger
      // ones, one transaction takes every shard's rows).
      counter: { shards: SHARDS, flushConcurrency: 2, flushBatchSize: 1 },
    });
    try {
      const rows = await dirtyRows(bounded);
      // Two flushes at once (the scheduled one and a flush() call, say): still two transactions at most.
      let reports: FlushReport[] = [];
      const mostOpen = await mostOpenDuring(bounded, async () => {
        reports = await Promise.all([bounded.counters.flush(), bounded.counters.flush()]);
      });
      expect(reports.map((report) => report.error)).toEqual([undefined, undefined]);
      expect(reports[0].rows + reports[1].rows).toBe(20);
      expect(mostOpen).toBe(database === 'sqlite' ? 1 : 2);
      await expectEveryShardWritten(bounded, rows);
    } finally {
      await bounded.close();
      await deleteKeys(suite.redis, boundedPrefix);
    }
  });

  it('writes each batch on its own when one of a transaction is already in the ledger', async () => {
    const rows = await dirtyRows();
    const ledgerBefore = await ledgerRows();
    const databaseService = counter.app.get(CounterDatabase);
    const realApply = databaseService.applyBatches.bind(databaseService);
    let writtenElsewhere: DeltaBatch | undefined;
    const apply = vi.spyOn(databaseService, 'applyBatches').mockImplementation(async (batches) => {
      if (!writtenElsewhere && batches.length > 1) {
        // Another flusher that recovered this batch (its lease ran out here) commits it first.
        writtenElsewhere = batches[1];
        expect(await realApply([writtenElsewhere])).toEqual({ applied: true, missingIds: [[]] });
      }
      return realApply(batches);
    });

    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(writtenElsewhere).toBeDefined();
    // The batch written elsewhere is acknowledged, not written again; every other one is written once.
    expect(report.batches).toBe(2 * SHARDS - 1);
    expect(report.rows).toBe(20 - writtenElsewhere!.rows.ids.length);
    const aloneAfterwards = apply.mock.calls.filter(
      ([batches]) => batches.length === 1 && batches[0] !== writtenElsewhere,
    );
    expect(aloneAfterwards.length).toBeGreaterThan(0);
    expect(await ledgerRows()).toBe(ledgerBefore + 2 * SHARDS);
    await expectEveryShardWritten(counter, rows);
    expect((await counter.counters.status()).pendingRows).toBe(0);
  });
});

// A flush that stops (the database became unavailable) gives back the leases of the shards it still
// meant to come back to, so that another flusher need not wait for them to expire.
describe.each(DATABASES)('a stopped flush on %s', (database) => {
  const suite = useCounterSuite(database, 'stopped', { shards: 2, flushBatchSize: 2 });
  const { prefix, redis } = suite;
  afterEach(() => vi.restoreAllMocks());

  it('releases the lease of a shard waiting for its next batch', async () => {
    const { counters, dataSource, app } = suite.counter;
    const keys = new CounterKeys(prefix, 2);
    const ids = await insertArticles(
      dataSource,
      Array.from({ length: 12 }, () => 0),
      0,
      spreadIds(keys, 12),
    );
    for (const id of ids) await counters.increment(Article, id, 'like_count', 2);
    const table = dataSource.getMetadata(Article).tablePath;
    const rowsOfShard = [0, 1].map((shard) => ids.filter((id) => keys.shardOf(String(id)) === shard).length);
    // Both shards need more than one batch of 2 rows.
    expect(Math.min(...rowsOfShard)).toBeGreaterThan(2);

    const databaseService = app.get(CounterDatabase);
    const realApply = databaseService.applyBatches.bind(databaseService);
    let calls = 0;
    vi.spyOn(databaseService, 'applyBatches').mockImplementation(async (batches) => {
      if (++calls === 1) return realApply(batches);
      throw new CounterDatabaseUnavailableError('database gone');
    });
    const stopped = await counters.flush();
    expect(stopped.error).toBeInstanceOf(CounterDatabaseUnavailableError);
    expect(stopped.batches).toBe(1);
    // The first shard wrote a batch and waited for its next one; the failed one was released on failure.
    const leases = await Promise.all([0, 1].map((shard) => redis.exists(keys.shard(table, shard).lease)));
    expect(leases).toEqual([0, 0]);

    vi.restoreAllMocks();
    const resumed = await counters.flush();
    expect(resumed.error).toBeUndefined();
    expect(resumed.busyShards).toBe(0);
    const stored = await articleCounts(dataSource, ids);
    expect(ids.map((id) => stored.get(id)!.likes)).toEqual(ids.map(() => 2));
  });
});

// A shard with no more dirty rows than a batch takes is claimed whole; a larger one gives its oldest
// rows first, so that none waits behind newer ones.
describe.each(DATABASES)('claims of a shard larger than a batch on %s', (database) => {
  const suite = useCounterSuite(database, 'oldest', { shards: 1, flushBatchSize: 3 });
  afterEach(() => vi.restoreAllMocks());

  it('writes its rows oldest first, a batch at a time, each change once', async () => {
    const { counters, dataSource, app } = suite.counter;
    const ids = await insertArticles(
      dataSource,
      Array.from({ length: 7 }, () => 0),
    );
    // Each row becomes dirty a few ms after the one before (the dirty set orders rows by that time);
    // later changes of a row do not move it back.
    const order = [ids[4], ids[0], ids[6], ids[2], ids[5], ids[1], ids[3]];
    for (const id of order) {
      await counters.increment(Article, id, 'like_count', 2);
      await sleep(3);
    }
    for (const id of ids) await counters.increment(Article, id, 'view_count', 1);

    const apply = vi.spyOn(app.get(CounterDatabase), 'applyBatches');
    const report = await counters.flush();
    expect(report.error).toBeUndefined();
    expect([report.batches, report.rows]).toEqual([3, 7]);
    const written = apply.mock.calls.flatMap(([batches]) => batches.map((batch) => batch.rows.ids.map(Number)));
    const sortedIds = (chunk: number[]) => [...chunk].sort((a, b) => a - b);
    expect(written.map(sortedIds)).toEqual([order.slice(0, 3), order.slice(3, 6), order.slice(6)].map(sortedIds));
    const stored = await articleCounts(dataSource, ids);
    expect(ids.map((id) => stored.get(id))).toEqual(ids.map(() => ({ likes: 2, views: 1 })));
    expect((await counters.status()).pendingRows).toBe(0);
  });
});

// Rows whose ids span more than a 32-bit sort key holds (see merge-batches.ts) are written exactly.
describe.each(DATABASES)('a transaction of rows with ids far apart on %s', (database) => {
  const suite = useCounterSuite(database, 'id-span', { shards: 1 });

  it.each([
    ['close together', [5, 3, 1_000, 2, 999, 4]],
    ['far apart, negative ones among them', [2_147_483_000, -2_147_483_000, 7, -1, 1_000_000_000, 1]],
  ])('writes each row its own deltas, ids %s', async (_, ids) => {
    const { counters, dataSource } = suite.counter;
    await insertArticles(
      dataSource,
      ids.map(() => 0),
      0,
      ids,
    );
    for (const [i, id] of ids.entries()) {
      await counters.increment(Article, id, 'like_count', i + 1);
      await counters.increment(Article, id, 'view_count', 10 * (i + 1));
    }
    const report = await counters.flush();
    expect(report.error).toBeUndefined();
    expect([report.batches, report.rows]).toEqual([1, ids.length]);
    const stored = await articleCounts(dataSource, ids);
    expect(ids.map((id) => stored.get(id))).toEqual(ids.map((_, i) => ({ likes: i + 1, views: 10 * (i + 1) })));
  });
});
