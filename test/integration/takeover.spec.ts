import { Logger } from '@nestjs/common';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MESSAGES } from '../../lib/counter.messages.js';
import { CounterLedgerEntry, type CounterModuleOptions } from '../../lib/index.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import type { DeltaBatch } from '../../lib/model/delta-batch.js';
import { Article } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, keysEndingWith, uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';
import { inspectionClient, TARGETS } from '../support/topologies.js';

/** The library's default flush interval; the default lease is one interval (at least 1000 ms). */
const INTERVAL_MS = 1_000;
/**
 * From a flusher's death to its batch in the database: its lease runs out within one interval, the
 * survivor's next scheduled flush comes within one more; 500 ms for that flush's own transaction on a
 * loaded machine.
 */
const TAKEOVER_BOUND_MS = 2 * INTERVAL_MS + 500;
/** A short lease where a test waits on it. */
const LEASE_MS = 300;

/** A crash, as the flusher sees it: from this call on, the process does nothing more. */
class SimulatedCrash extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// G10: a dead flusher's shards are taken over within about two flush intervals, while a live one keeps
// its shards however long its transaction takes; a lease lost under a live flusher stops it (G1 holds
// either way); a final flush that leaves work behind says what and why.
describe.each(TARGETS)('takeover on %s, %s', (databaseName, topology) => {
  const prefix = uniquePrefix('takeover');
  const redis = inspectionClient(topology);
  let database: TestDatabase;
  const apps: CounterApp[] = [];

  beforeAll(async () => void (database = await createTestDatabase(databaseName)));
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const app of apps.splice(0)) await app.close();
  });
  afterAll(async () => {
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  async function start(counter: CounterModuleOptions = {}): Promise<CounterApp> {
    const app = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      topology,
      counter: { shards: 2, flushOnShutdown: false, ...counter },
    });
    apps.push(app);
    return app;
  }

  /** Six rows with changes waiting, made through `app`; their database values before. */
  async function pendingChanges(app: CounterApp) {
    const ids = await insertArticles(app.dataSource, [3, 5, 8, 13, 21, 34]);
    const start = await articleCounts(app.dataSource, ids);
    for (const id of ids) await app.counters.increment(Article, id, 'like_count', 10);
    return { ids, start };
  }

  async function expectExact(app: CounterApp, { ids, start }: Awaited<ReturnType<typeof pendingChanges>>) {
    const counts = await articleCounts(app.dataSource, ids);
    expect(ids.map((id) => counts.get(id)!.likes)).toEqual(ids.map((id) => start.get(id)!.likes + 10));
    const live = await app.counters.getMany(Article, ids, ['like_count']);
    expect(ids.map((id) => live.get(id)!.like_count)).toEqual(ids.map((id) => start.get(id)!.likes + 10));
    expect(await keysEndingWith(redis, prefix, ':batch')).toEqual([]);
  }

  const ledger = (app: CounterApp) => app.dataSource.getRepository(CounterLedgerEntry);

  /** Holds the app's batch transactions until `release()`; `reached` resolves when the first one waits. */
  function stallWrites(app: CounterApp) {
    const database = app.app.get(CounterDatabase);
    const realApply = database.applyBatches.bind(database);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let reach!: () => void;
    const reached = new Promise<void>((resolve) => (reach = resolve));
    const written: DeltaBatch[][] = [];
    vi.spyOn(database, 'applyBatches').mockImplementation(async (batches) => {
      written.push(batches);
      reach();
      await released;
      return realApply(batches);
    });
    return { reached, release, written };
  }

  it('flushes the shards of a flusher that died holding them within two flush intervals', async () => {
    const dying = await start();
    const survivor = await start({ flushEnabled: true });
    const ledgerBefore = await ledger(survivor).count();
    // A dead process renews, writes and releases nothing (as in crash-recovery.spec).
    const store = dying.app.get(FlushStore);
    vi.spyOn(store, 'renew').mockRejectedValue(new SimulatedCrash('renew'));
    vi.spyOn(store, 'release').mockRejectedValue(new SimulatedCrash('release'));
    const apply = vi
      .spyOn(dying.app.get(CounterDatabase), 'applyBatches')
      .mockRejectedValue(new SimulatedCrash('write'));

    // Right after a scheduled flush of the survivor, so that the dying one claims before the next.
    const { lastSuccessfulFlushAt } = await survivor.counters.status();
    while ((await survivor.counters.status()).lastSuccessfulFlushAt === lastSuccessfulFlushAt) await sleep(10);
    const changes = await pendingChanges(dying);
    const crashed = await dying.counters.flush();
    const diedAt = Date.now();
    expect(crashed.error).toBeInstanceOf(SimulatedCrash);
    const batchIds = apply.mock.calls.flatMap(([batches]) => batches.map((batch) => batch.batchId));
    expect(batchIds.length).toBeGreaterThan(0);
    // Its leases are still in force: the survivor waits for them to run out, it does not break them.
    expect((await keysEndingWith(redis, prefix, ':lease')).length).toBe(crashed.failedShards);

    const deadline = diedAt + 10 * INTERVAL_MS;
    while ((await ledger(survivor).countBy(batchIds.map((batchId) => ({ batchId })))) < batchIds.length) {
      if (Date.now() > deadline) throw new Error('the survivor never wrote the dead flusher’s batches');
      await sleep(10);
    }
    const takeoverMs = Date.now() - diedAt;
    expect(takeoverMs, `taken over ${takeoverMs} ms after the death`).toBeLessThanOrEqual(TAKEOVER_BOUND_MS);
    // The survivor may not have acknowledged yet when the ledger shows the batch.
    await sleep(200);
    await expectExact(survivor, changes);
    expect(await ledger(survivor).count()).toBe(ledgerBefore + batchIds.length);
  });

  it('keeps the shards of a live flusher whose transaction outlasts the lease, and writes them once', async () => {
    const holder = await start({ flushLeaseMs: LEASE_MS });
    const other = await start({ flushLeaseMs: LEASE_MS });
    const changes = await pendingChanges(holder);
    const ledgerBefore = await ledger(other).count();
    const stall = stallWrites(holder);
    const holding = holder.counters.flush();
    await stall.reached;
    const held = stall.written[0].length;

    // Three lease lengths: without renewal the other instance would have taken the shards over twice.
    const during = [];
    for (const until = Date.now() + 3 * LEASE_MS; Date.now() < until; await sleep(LEASE_MS / 2)) {
      during.push(await other.counters.flush());
    }
    stall.release();
    const report = await holding;

    expect(during.length).toBeGreaterThanOrEqual(5);
    expect(during.map(({ busyShards, batches, recoveredBatches }) => [busyShards, batches, recoveredBatches])).toEqual(
      during.map(() => [held, 0, 0]),
    );
    expect([report.error, report.batches, report.lostLeases, report.recoveredBatches]).toEqual([undefined, held, 0, 0]);
    const after = await other.counters.flush();
    expect([after.error, after.batches, after.recoveredBatches, after.busyShards]).toEqual([undefined, 0, 0, 0]);
    await expectExact(other, changes);
    expect(await ledger(other).count()).toBe(ledgerBefore + held);
  });

  it('keeps its leases through one renewal whose reply is slower than the lease', async () => {
    const holder = await start({ flushLeaseMs: 1_000 });
    const taker = await start({ flushLeaseMs: 1_000 });
    const changes = await pendingChanges(holder);
    const store = holder.app.get(FlushStore);
    const renew = store.renew.bind(store);
    let calls = 0;
    // The first renewal's reply takes 1.5 leases (a slow node, a reply stuck until the command timeout).
    vi.spyOn(store, 'renew').mockImplementation(async (...args) => {
      if (calls++ === 0) await sleep(1_500);
      return renew(...args);
    });
    const stall = stallWrites(holder);
    const holding = holder.counters.flush();
    await stall.reached;
    const held = stall.written[0].length;
    await sleep(1_600);

    // The other renewals went on: the shards are still the holder's.
    const meanwhile = await taker.counters.flush();
    expect([meanwhile.busyShards, meanwhile.recoveredBatches, meanwhile.batches]).toEqual([held, 0, 0]);
    stall.release();
    const report = await holding;
    expect([report.error, report.lostLeases, report.batches]).toEqual([undefined, 0, held]);
    await expectExact(holder, changes);
  });

  it('stops a flusher that finds its lease lost: the new holder writes the batch, once', async () => {
    const holder = await start({ flushLeaseMs: LEASE_MS });
    const taker = await start({ flushLeaseMs: LEASE_MS });
    const changes = await pendingChanges(holder);
    const ledgerBefore = await ledger(taker).count();
    const store = holder.app.get(FlushStore);
    // Its renewals fail while it stalls (a pause of its event loop, a Redis it cannot reach)...
    const renew = vi.spyOn(store, 'renew').mockRejectedValue(new SimulatedCrash('renew'));
    const ack = vi.spyOn(store, 'ack');
    const stall = stallWrites(holder);
    const holding = holder.counters.flush();
    await stall.reached;
    const held = stall.written[0].length;
    await sleep(LEASE_MS + 100);

    const takeover = await taker.counters.flush();
    expect([takeover.error, takeover.recoveredBatches, takeover.batches]).toEqual([undefined, held, held]);
    await expectExact(taker, changes);
    // ...then reach Redis again and find the leases gone, before its transaction goes on.
    renew.mockRestore();
    await sleep(LEASE_MS);
    stall.release();
    const late = await holding;

    expect([late.error, late.lostLeases, late.batches]).toEqual([undefined, held, 0]);
    // Its batches found in the ledger, it may acknowledge them: the new holder did already, so nothing is.
    expect(await Promise.all(ack.mock.results.map(({ value }) => value as Promise<boolean>))).toEqual(
      ack.mock.calls.map(() => false),
    );
    await expectExact(taker, changes);
    expect(await ledger(taker).count()).toBe(ledgerBefore + held);
  });

  it('warns when the final flush leaves shards busy, naming them and the rows left', async () => {
    const holder = await start({ flushLeaseMs: LEASE_MS });
    const leaving = await start({ flushLeaseMs: LEASE_MS, flushOnShutdown: true });
    const changes = await pendingChanges(holder);
    const stall = stallWrites(holder);
    const holding = holder.counters.flush();
    await stall.reached;
    const held = stall.written[0].length;
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);

    await leaving.close();
    apps.splice(apps.indexOf(leaving), 1);
    const leftWork = (message: unknown) => String(message).startsWith('The final counter flush before shutdown left');
    expect(warn.mock.calls.map(([message]) => message).filter(leftWork)).toEqual([
      MESSAGES.finalFlushLeftWork({ busy: held, lost: 0, failed: 0, rows: changes.ids.length }),
    ]);

    stall.release();
    expect((await holding).batches).toBe(held);
    await expectExact(holder, changes);
    // A final flush that leaves nothing says nothing.
    const clean = await start({ flushOnShutdown: true });
    warn.mockClear();
    await clean.close();
    apps.splice(apps.indexOf(clean), 1);
    expect(warn.mock.calls.map(([message]) => message).filter(leftWork)).toEqual([]);
  });
});
