import calculateSlot from 'cluster-key-slot';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterKeys } from '../../../lib/redis/counter.keys.js';
import { FlushPipeline } from '../../../lib/flush/flush.pipeline.js';
import { CounterDatabase } from '../../../lib/sql/counter.database.js';
import type { DeltaBatch } from '../../../lib/model/delta-batch.js';
import type { CounterApp } from '../../support/counter-app.js';
import { Article, ENTITIES } from '../../fixtures/entities.js';
import { nodeOfTrip, type RoundTrips } from '../../support/redis-traffic.js';
import { useRoundTripSuite } from '../../support/round-trip-suite.js';
import { articleCounts, insertArticles, spreadIds } from '../../../support/rows.js';
import { scriptsBySha } from '../../support/script-calls.js';
import { slotOwners } from '../../../support/slot-owners.js';
import { TOPOLOGIES } from '../../support/topologies.js';

// Performance contract: these tests pin the shape of an optimisation documented in docs/PERFORMANCE.md
// ("Flush pipeline": round trips of a flush), not a guarantee, and change when that optimisation does. The
// guarantees it must keep are proven by the specs in test/integration/.

/** Few enough that a flush's workers (at least two, claiming two shards each) claim them all in one turn. */
const SHARDS = 4;

// A flush reads every shard's backlog first (one round trip per node), claims only the shards with
// something waiting, and sends the claims its workers make in one turn together, and a transaction's
// acks together: one round trip per node each, not one per shard. A quiet flush (the scheduled one,
// every second, on every instance) costs one round trip per node.
describe.each(TOPOLOGIES)('round trips of a flush on a %s', (topology) => {
  const suite = useRoundTripSuite(topology, 'flush-trips', { shards: SHARDS });
  const { prefix, redis } = suite;
  const keys = new CounterKeys(prefix, SHARDS);
  let counter: CounterApp;
  let roundTrips: RoundTrips;
  beforeAll(() => void ({ counter, roundTrips } = suite));
  afterEach(() => vi.restoreAllMocks());

  /** Each round trip as the library script of each of its commands, and the node it went to. */
  async function tripsByScript() {
    const scripts = scriptsBySha();
    const owner = await slotOwners(redis);
    return roundTrips.trips.map((trip) => ({
      scripts: trip.commands.map((name, index) => (name === 'evalsha' ? scripts.get(trip.args[index][0]) : name)),
      node: nodeOfTrip(trip, owner),
    }));
  }

  /** The nodes that serve the slots of `shards` of an entity. */
  async function nodesOf(entities: Array<typeof Article>, shards: number[]) {
    const owner = await slotOwners(redis);
    const tables = entities.map((entity) => counter.dataSource.getMetadata(entity).tablePath);
    return [...new Set(tables.flatMap((table) => shards.map((shard) => owner(keys.shard(table, shard).slot))))].sort();
  }

  const allShards = Array.from({ length: SHARDS }, (_, shard) => shard);

  it('with nothing waiting: one round trip per node, every shard backlog read in one call per slot, and no claim', async () => {
    roundTrips.reset();
    const report = await counter.counters.flush();
    expect(report).toMatchObject({ batches: 0, rows: 0, busyShards: 0, failedShards: 0 });
    expect(report.error).toBeUndefined();
    const trips = await tripsByScript();
    const nodes = await nodesOf(ENTITIES as Array<typeof Article>, allShards);
    expect(trips.map(({ node }) => node).sort()).toEqual(nodes);
    const shards = ENTITIES.flatMap((entity) =>
      allShards.map((shard) => keys.shard(counter.dataSource.getMetadata(entity).tablePath, shard)),
    );
    // A single Redis reads them all in one call; a cluster in one per slot (a script's keys share one).
    const calls = topology === 'standalone' ? 1 : new Set(shards.map((shard) => shard.slot)).size;
    expect(trips.flatMap(({ scripts }) => scripts)).toEqual(Array(calls).fill('nestjsCounterStatus'));
    const named = roundTrips.trips.flatMap((trip) => trip.keys);
    expect(named.flat().sort()).toEqual(shards.flatMap((shard) => [shard.dirty, shard.batch, shard.generation]).sort());
    if (topology === 'cluster')
      for (const callKeys of named) expect(new Set(callKeys.map((key) => calculateSlot(key))).size).toBe(1);
  });

  it("claims the shards in one round trip per node, and acknowledges each transaction's in one per node", async () => {
    const ids = await insertArticles(
      counter.dataSource,
      Array.from({ length: 4 * SHARDS }, () => 10),
      0,
      spreadIds(keys, 4 * SHARDS),
    );
    for (const [i, id] of ids.entries()) await counter.counters.increment(Article, id, 'like_count', i + 1);
    const apply = vi.spyOn(counter.app.get(CounterDatabase), 'applyBatches');
    roundTrips.reset();
    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report).toMatchObject({ batches: SHARDS, rows: 4 * SHARDS, busyShards: 0, failedShards: 0 });
    const stored = await articleCounts(counter.dataSource, ids);
    expect(ids.map((id) => stored.get(id)!.likes)).toEqual(ids.map((_, i) => 10 + i + 1));

    const trips = await tripsByScript();
    const phase = (script: string) => trips.filter(({ scripts }) => scripts.includes(script));
    const count = (script: string) => trips.flatMap(({ scripts }) => scripts).filter((name) => name === script).length;
    // Each round trip carries one kind of call: backlog, claims or acks.
    expect(trips.filter(({ scripts }) => new Set(scripts).size !== 1)).toEqual([]);
    expect(
      phase('nestjsCounterStatus')
        .map(({ node }) => node)
        .sort(),
    ).toEqual(await nodesOf(ENTITIES as Array<typeof Article>, allShards));
    // The workers claim in the same turn: every claim in one round trip per node.
    expect(count('nestjsCounterClaim')).toBe(SHARDS);
    expect(
      phase('nestjsCounterClaim')
        .map(({ node }) => node)
        .sort(),
    ).toEqual(await nodesOf([Article], allShards));
    // A transaction's acks together: at most one round trip per transaction and node of its shards.
    const transactions = apply.mock.calls.map(([batches]) => batches);
    const shardsOf = (batches: DeltaBatch[]) => batches.map((batch) => batch.shard);
    const ackBound = (await Promise.all(transactions.map((batches) => nodesOf([Article], shardsOf(batches))))).reduce(
      (sum, nodes) => sum + nodes.length,
      0,
    );
    expect(transactions.flatMap(shardsOf).sort()).toEqual(allShards);
    expect(count('nestjsCounterAck')).toBe(SHARDS);
    expect(phase('nestjsCounterAck').length).toBeLessThanOrEqual(ackBound);
    if (topology === 'standalone') expect(phase('nestjsCounterAck').length).toBeLessThan(SHARDS);
    expect(trips).toHaveLength(
      phase('nestjsCounterStatus').length + phase('nestjsCounterClaim').length + phase('nestjsCounterAck').length,
    );
  });
});

// A worker does not wait for its acks before it claims again: a transaction's acks and the worker's next
// claims reach Redis together, one round trip where there would be two.
describe('round trips of a flush of one shard per transaction', () => {
  // Three workers (one transaction at a time), each transaction one shard's batch of one row.
  const suite = useRoundTripSuite('standalone', 'flush-ack-claim', {
    shards: SHARDS,
    flushBatchSize: 1,
    flushConcurrency: 1,
  });
  const { prefix } = suite;
  const keys = new CounterKeys(prefix, SHARDS);

  it("sends a transaction's acks with its worker's next claims", async () => {
    const { counter, roundTrips } = suite;
    const ids = await insertArticles(
      counter.dataSource,
      Array.from({ length: SHARDS }, () => 10),
      0,
      spreadIds(keys, SHARDS),
    );
    expect(new Set(ids.map((id) => keys.shardOf(String(id)))).size).toBe(SHARDS);
    for (const [i, id] of ids.entries()) await counter.counters.increment(Article, id, 'like_count', i + 1);
    roundTrips.reset();
    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report).toMatchObject({ batches: SHARDS, rows: SHARDS, busyShards: 0, failedShards: 0 });
    const stored = await articleCounts(counter.dataSource, ids);
    expect(ids.map((id) => stored.get(id)!.likes)).toEqual(ids.map((_, i) => 10 + i + 1));

    const scripts = scriptsBySha();
    const trips = roundTrips.trips.map((trip) =>
      trip.commands.map((name, index) => (name === 'evalsha' ? scripts.get(trip.args[index][0]) : name)),
    );
    const count = (script: string) => trips.flat().filter((name) => name === script).length;
    expect([count('nestjsCounterClaim'), count('nestjsCounterAck')]).toEqual([SHARDS, SHARDS]);
    // The workers' first claims go together; every later claim goes with the acks of the transaction
    // its worker wrote before.
    const claimTrips = trips.filter((names) => names.includes('nestjsCounterClaim'));
    expect(claimTrips[0]).toEqual(Array(new FlushPipeline(1, 1).workers).fill('nestjsCounterClaim'));
    expect(claimTrips.slice(1).length).toBeGreaterThan(0);
    for (const names of claimTrips.slice(1)) expect(names).toContain('nestjsCounterAck');
  });

  // One transaction at a time: the one waiting starts on the next turn of the event loop, after the
  // calls queued by the worker whose transaction ended (its acks, its next claims) have been sent, so
  // Redis runs them while it runs (with better-sqlite3 a transaction holds the thread until it ends).
  it('sends the acks of a transaction before the next transaction starts', async () => {
    const { counter, roundTrips } = suite;
    const ids = await insertArticles(
      counter.dataSource,
      Array.from({ length: SHARDS }, () => 0),
      0,
      spreadIds(keys, SHARDS),
    );
    for (const id of ids) await counter.counters.increment(Article, id, 'like_count', 1);
    const scripts = scriptsBySha();
    const acksSent = () =>
      roundTrips.trips
        .flatMap((trip) =>
          trip.commands.map(
            (name, index) => name === 'evalsha' && scripts.get(trip.args[index][0]) === 'nestjsCounterAck',
          ),
        )
        .filter(Boolean).length;
    // Each transaction's first statement, as TypeORM tells the data source's logger of it.
    const acksAtStart: number[] = [];
    const logged = vi.spyOn(counter.dataSource.logger, 'logQuery').mockImplementation((sql: string) => {
      if (/^(START|BEGIN) TRANSACTION/i.test(sql)) acksAtStart.push(acksSent());
    });
    roundTrips.reset();
    try {
      const report = await counter.counters.flush();
      expect([report.error, report.batches]).toEqual([undefined, SHARDS]);
    } finally {
      logged.mockRestore();
    }
    expect(acksAtStart).toEqual([0, 1, 2, 3]);
  });
});
