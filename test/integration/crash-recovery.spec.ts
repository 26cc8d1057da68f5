import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterLedgerEntry } from '../../lib/index.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import type { CounterApp } from '../support/counter-app.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { Article } from '../fixtures/entities.js';
import { keysEndingWith } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';
import { TARGETS } from '../support/topologies.js';

const LEASE_MS = 400;

/** A crash, as the flusher sees it: from this call on, the process does nothing more. */
class SimulatedCrash extends Error {}

// G1 at chosen crash points: whatever step a flusher dies at, the next flush finishes its batch
// exactly once.
describe.each(TARGETS)('crash recovery on %s, %s', (database, topology) => {
  const options = { flushLeaseMs: LEASE_MS, flushOnShutdown: false, shards: 2 };
  const suite = useCounterSuite({ database, topology }, 'crash', options, 2);
  const { redis, prefix } = suite;
  let crashing: CounterApp;
  let survivor: CounterApp;
  beforeAll(() => void ([crashing, survivor] = suite.apps));

  afterEach(() => vi.restoreAllMocks());

  /** A dead process releases nothing: its lease must expire before anyone else may take the shard. */
  function crashesWithoutRelease() {
    vi.spyOn(crashing.app.get(FlushStore), 'release').mockRejectedValue(new SimulatedCrash('release'));
  }

  /** The crashing instance dies when it writes its batches: claimed, never written. */
  function crashAtWrite() {
    crashesWithoutRelease();
    return vi.spyOn(crashing.app.get(CounterDatabase), 'applyBatches').mockRejectedValue(new SimulatedCrash('write'));
  }

  /** The crashing instance dies when it acknowledges its batches: committed, never acknowledged. */
  function crashAtAck() {
    crashesWithoutRelease();
    return vi.spyOn(crashing.app.get(FlushStore), 'ack').mockRejectedValue(new SimulatedCrash('ack'));
  }

  async function pendingChanges(): Promise<{ ids: number[]; start: Map<number, number> }> {
    const ids = await insertArticles(crashing.dataSource, [3, 5, 8, 13, 21, 34]);
    for (const id of ids) {
      await crashing.counters.increment(Article, id, 'like_count', 10);
      await crashing.counters.increment(Article, id, 'view_count', 2);
    }
    return {
      ids,
      start: new Map([...(await articleCounts(crashing.dataSource, ids))].map(([id, c]) => [id, c.likes])),
    };
  }

  async function expectExact(ids: number[], start: Map<number, number>) {
    const counts = await articleCounts(survivor.dataSource, ids);
    expect(ids.map((id) => counts.get(id))).toEqual(ids.map((id) => ({ likes: start.get(id)! + 10, views: 2 })));
    const live = await survivor.counters.getMany(Article, ids);
    expect(ids.map((id) => live.get(id))).toEqual(
      ids.map((id) => ({ like_count: start.get(id)! + 10, view_count: 2 })),
    );
    expect(await keysEndingWith(redis, prefix, ':batch')).toEqual([]);
  }

  async function flushUntilDone(app: CounterApp) {
    const deadline = Date.now() + 10 * LEASE_MS;
    let total = { batches: 0, recoveredBatches: 0 };
    while (Date.now() < deadline) {
      const report = await app.counters.flush();
      expect(report.error).toBeUndefined();
      total = {
        batches: total.batches + report.batches,
        recoveredBatches: total.recoveredBatches + report.recoveredBatches,
      };
      if (report.busyShards === 0 && (await keysEndingWith(redis, prefix, ':batch')).length === 0) return total;
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 4));
    }
    throw new Error('the survivor never finished the crashed batches');
  }

  const ledgerRows = () => survivor.dataSource.getRepository(CounterLedgerEntry).count();

  it('finishes a batch whose flusher died right after the claim', async () => {
    const { ids, start } = await pendingChanges();
    const ledgerBefore = await ledgerRows();
    const apply = crashAtWrite();
    const crashed = await crashing.counters.flush();
    expect(crashed.error).toBeInstanceOf(SimulatedCrash);
    expect(apply).toHaveBeenCalled();
    expect((await keysEndingWith(redis, prefix, ':batch')).length).toBeGreaterThan(0);
    // Claimed but not written: the database still has the start values, the live values are intact.
    const unwritten = await articleCounts(survivor.dataSource, ids);
    expect(ids.map((id) => unwritten.get(id)!.likes)).toEqual(ids.map((id) => start.get(id)));
    expect(await survivor.counters.get(Article, ids[0], 'like_count')).toBe(start.get(ids[0])! + 10);

    const done = await flushUntilDone(survivor);
    expect(done.recoveredBatches).toBeGreaterThanOrEqual(1);
    await expectExact(ids, start);
    expect(await ledgerRows()).toBe(ledgerBefore + done.batches);
  });

  it('acknowledges, without writing again, a batch committed before its flusher died', async () => {
    const { ids, start } = await pendingChanges();
    const ledgerBefore = await ledgerRows();
    const ack = crashAtAck();
    const crashed = await crashing.counters.flush();
    expect(crashed.error).toBeInstanceOf(SimulatedCrash);
    expect(ack).toHaveBeenCalled();
    expect((await keysEndingWith(redis, prefix, ':batch')).length).toBeGreaterThan(0);
    // Committed: the database has the values, and the live values do not count them twice.
    const committed = await articleCounts(survivor.dataSource, ids);
    const committedRows = ids.filter((id) => committed.get(id)!.likes === start.get(id)! + 10).length;
    expect(committedRows).toBeGreaterThan(0);
    expect(await survivor.counters.get(Article, ids[0], 'like_count')).toBe(start.get(ids[0])! + 10);

    const done = await flushUntilDone(survivor);
    expect(done.recoveredBatches).toBeGreaterThanOrEqual(1);
    await expectExact(ids, start);
    // The crashed batch is in the ledger once; the survivor wrote only what was never committed.
    expect(await ledgerRows()).toBe(ledgerBefore + crashed.batches + done.batches);
  });

  it('applies a batch once when its flusher stalls past the lease and another takes over', async () => {
    const { ids, start } = await pendingChanges();
    const ledgerBefore = await ledgerRows();
    const database = crashing.app.get(CounterDatabase);
    const realApply = database.applyBatches.bind(database);
    // A stalled process renews nothing either: its lease runs out (a live one is kept, takeover.spec).
    vi.spyOn(crashing.app.get(FlushStore), 'renew').mockRejectedValue(new SimulatedCrash('renew'));
    let release!: () => void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    let reachedStall!: () => void;
    const inStall = new Promise<void>((resolve) => (reachedStall = resolve));
    vi.spyOn(database, 'applyBatches').mockImplementation(async (batches) => {
      reachedStall();
      await stalled; // a long GC pause, a frozen VM: the lease runs out meanwhile
      return realApply(batches);
    });
    const slowFlush = crashing.counters.flush();
    await inStall;
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 100));

    const takeover = await flushUntilDone(survivor);
    expect(takeover.recoveredBatches).toBeGreaterThanOrEqual(1);
    await expectExact(ids, start);

    release();
    const late = await slowFlush;
    expect(late.error).toBeUndefined();
    // The stalled flusher's write hit the ledger's primary key and rolled back.
    await expectExact(ids, start);
    expect(await ledgerRows()).toBe(ledgerBefore + takeover.batches + late.batches);
  });
});
