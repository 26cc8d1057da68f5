// Chaos scenario 6 (issue 3): Redis Cluster failover under load. Two instances connected with
// `{ clusterNodes }` to the local cluster (scripts/redis-cluster.sh) take increments and flush in a loop
// while one master (the one holding most of the targets' shards) changes hands:
// - (a) graceful: `CLUSTER FAILOVER` on its replica. Nothing is lost: the invariant is exact.
// - (b) its redis-server SIGKILLed: after the node timeout the replica is promoted. Meanwhile increments
//   to its slots fail with CounterStoreUnavailableError. Replication is asynchronous, so what the
//   master acknowledged and had not yet sent to its replica may be lost. The bound asserted, per target
//   of that master: the deltas acknowledged between the last moment the replica was seen caught up
//   (its replication offset reached the master's, checked just before the kill) and the promotion.
//   Targets of the other masters lose nothing; nothing is ever counted twice.
// - (c) its replica paused (CLIENT PAUSE: it stops applying the stream) while a batch is claimed, then
//   the master killed before the replica caught up. The claim's WAIT sees no replica confirm, so the
//   flush fails and the batch is not written; the promoted replica never saw the claim and flushes those
//   deltas as its own pending ones. No batch may be applied twice. The loss bound is the same as in (b),
//   counted from just before the pause. Which error the flush reports depends on the order of its
//   claims: WAIT holds the instance's one connection to that master, so claims (and increments) queued
//   behind a WAIT time out; the first failure is the report's error. Both names are recorded.
// After each case the killed node is started again (it rejoins as a replica), the original masters take
// their roles back, and the test waits for all six nodes, cluster_state:ok and three replicas in sync.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { deleteKeys } from '../../support/redis.js';
import { CLUSTER_NODES, localClusterClient } from '../../support/local-cluster.js';
import type { RedisServer } from '../../support/redis-server.js';
import type { WireFlushReport } from '../worker/worker-protocol.js';
import { CHAOS_DATABASES, type ChaosDeployment } from '../harness/chaos-deployment.js';
import type { ChaosWorker } from '../harness/chaos-worker.js';
import { useChaosScenario, type ChaosRun } from '../harness/chaos-scenario.js';
import * as nodes from '../harness/cluster-nodes.js';
import { rowKeysMissing, targetSlots } from '../harness/cluster-targets.js';
import { insertArticleTargets, readTargets, targetKey, type CounterTarget } from '../harness/counter-targets.js';
import { total } from '../harness/final-flush.js';
import { FlushLoops } from '../harness/flush-loops.js';
import type { DatabaseSampler } from '../harness/database-sampler.js';
import type { LoadGenerator } from '../harness/load-generator.js';
import { batchInLedger } from '../harness/protocol-state.js';
import { sleep } from '../harness/time.js';
import { TimedDeltas } from '../harness/timed-deltas.js';

const ROWS = 40;
/** Enough shards that the victim master holds several of them, whatever the schema name hashes to. */
const SHARDS = 16;
const WARMUP_MS = 600;
/** Load and flushing after the new master took over. */
const AFTER_MS = 1_000;
/**
 * How long the replica of case (c) stops applying its master's stream: past the claim and the kill. The
 * flush before the kill queues one WAIT (up to half the 1 s command timeout) per shard of the victim on
 * its one connection to it: five or six shards, near 4 s on a loaded machine; this is twice that. A
 * CLIENT PAUSE cannot be lifted early (with ALL it blocks its own CLIENT UNPAUSE), and a SIGSTOPped
 * replica would still read the stream from its socket once it goes on.
 */
const REPLICA_PAUSE_MS = 8_000;
const CLUSTER_COUNTER = { redis: { clusterNodes: CLUSTER_NODES }, shards: SHARDS };

const SCRIPT = new URL('../../scripts/redis-cluster.sh', import.meta.url).pathname;

/** One case's moving parts, started the same way for each. */
interface Run {
  chaos: ChaosRun;
  deployment: ChaosDeployment;
  workers: ChaosWorker[];
  targets: CounterTarget[];
  start: Map<string, number>;
  tally: TimedDeltas;
  load: LoadGenerator;
  sampler: DatabaseSampler;
  loops: FlushLoops;
  /** The master whose slots the fault takes down, and its replica. */
  victim: number;
  replica: number;
  onVictim: (key: string) => boolean;
  victimTargets: number;
  ledgerBefore: number;
  seed: number;
}

describe.each(CHAOS_DATABASES)('scenario 6: Redis Cluster failover under load, on %s', (databaseName) => {
  let original: nodes.NodeRole[] = [];
  let startedHere = false;
  /** Nodes this test killed, to start again whatever happens. */
  const killed: RedisServer[] = [];
  const scenario = useChaosScenario(databaseName, {
    afterClose: async (prefix) => {
      await healCluster(killed.splice(0), original);
      if (prefix) {
        const redis = localClusterClient();
        await deleteKeys(redis, prefix).finally(() => redis.disconnect());
      }
    },
    teardownTimeoutMs: 120_000,
  });

  beforeAll(async () => {
    const answering = await Promise.all(nodes.CLUSTER_PORTS.map(nodes.nodeAnswers));
    if (answering.every((up) => !up)) {
      // No cluster yet (as the main suite's global setup, start it, and stop it afterwards).
      startedHere = true;
      await promisify(execFile)('bash', [SCRIPT, 'start'], { timeout: 120_000 });
    }
    // A cluster may still be syncing its replicas; one that never gets healthy is replaced.
    await nodes.waitUntilHealthy().catch(() => nodes.recreateCluster());
    original = await nodes.layout();
  }, 180_000);

  afterAll(async () => {
    if (startedHere) await promisify(execFile)('bash', [SCRIPT, 'stop'], { timeout: 60_000 });
  });

  async function startRun(label: string): Promise<Run> {
    const chaos = await scenario.deploy(label, CLUSTER_COUNTER);
    const { deployment, seed } = chaos;
    const { observer, prefix } = deployment;
    // Rows over every shard, so over every master: rows of consecutive ids would share one shard (a run
    // of 100 ids), all on the victim, with nothing left to show the other masters serving on.
    const targets = await insertArticleTargets(observer, ROWS, new CounterKeys(prefix, SHARDS));
    const start = await readTargets(observer, targets);
    const ledgerBefore = await deployment.ledgerRows();
    const slots = targetSlots(observer, prefix, SHARDS);
    const masterOf = await nodes.slotMasters();
    const victim = mostTargets(targets.map((target) => masterOf(slots.slotOf(target))));
    const victimKeys = new Set(targets.filter((target) => masterOf(slots.slotOf(target)) === victim).map(targetKey));
    const replica = await nodes.replicaOf(victim);

    const workers = await deployment.startWorkers(['a', 'b']);
    const sampler = deployment.startSampler(targets);
    const tally = new TimedDeltas();
    const load = deployment.startLoad({ targets, workers, seed, tally });
    const loops = new FlushLoops(100);
    for (const worker of workers) loops.add(worker);
    deployment.onClose(() => loops.stop());
    await sleep(WARMUP_MS);

    // The slots computed here are the ones the workers write: every counted target's row is in Redis.
    const redis = localClusterClient();
    const counted = targets.filter((target) => tally.acknowledged(target) > 0);
    const missing = await rowKeysMissing(redis, slots, counted).finally(() => redis.disconnect());
    expect(missing, 'row keys computed for the targets').toEqual([]);
    return {
      chaos,
      deployment,
      workers,
      targets,
      start,
      tally,
      load,
      sampler,
      loops,
      victim,
      replica,
      onVictim: (key) => victimKeys.has(key),
      victimTargets: victimKeys.size,
      ledgerBefore,
      seed,
    };
  }

  /** Stops the load and the loops, flushes everything, and measures. */
  async function finish(run: Run, extraReports: WireFlushReport[] = []) {
    const { chaos, deployment, targets, start, tally, load, sampler, loops, workers } = run;
    await load.stop();
    const reports = [...(await loops.stop()), ...extraReports];
    const redis = localClusterClient();
    const { final, figures } = await chaos
      .settle({ flusher: workers[0], targets, start, tally, sampler, redis })
      .finally(() => redis.disconnect());
    const end = await readTargets(deployment.observer, targets);
    const ledgerRows = (await deployment.ledgerRows()) - run.ledgerBefore;
    const statuses = await Promise.all(workers.map((worker) => worker.status()));
    return { reports, final, figures, end, ledgerRows, statuses };
  }

  it('(a) CLUSTER FAILOVER to a replica: flushing goes on, nothing lost or counted twice', async () => {
    const run = await startRun('s6-graceful');
    const { tally } = run;
    const failoverAt = Date.now();
    await nodes.failoverTo(run.replica);
    const promotedAt = Date.now();
    await nodes.waitUntilHealthy();
    await sleep(AFTER_MS);
    const { reports, final, figures, ledgerRows } = await finish(run);

    const after = reports.filter((report) => report.startedAt > promotedAt);
    const details = {
      seed: run.seed,
      victimMaster: run.victim,
      promoted: run.replica,
      victimTargets: run.victimTargets,
      failoverMs: promotedAt - failoverAt,
      refused: tally.calls.refused,
      errors: errorNames(tally.errors),
      flushErrors: flushErrorNames(reports),
      flushesAfterFailover: after.length,
      batchesAfterFailover: total(after, 'batches'),
      batchesApplied: total([...reports, ...final], 'batches'),
      ledgerRows,
    };
    run.chaos.record('6a cluster failover (graceful)', figures, details);

    // A manual failover pauses writes on the old master until its replica has caught up: an increment
    // held there past redisCommandTimeoutMs times out, its outcome unknown (uncertain), as any timeout.
    // Every acknowledged delta is in the database and nothing beyond acknowledged + uncertain.
    expect(figures.wrong).toEqual([]);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, backwards: 0 });
    expect(figures.inDatabase).toBeGreaterThanOrEqual(figures.acknowledged);
    expect(figures.inDatabase).toBeLessThanOrEqual(figures.acknowledged + figures.uncertain);
    expect(details.batchesAfterFailover, 'batches flushed after the topology change').toBeGreaterThan(0);
    expect(ledgerRows).toBe(details.batchesApplied);
    expect(final.filter((report) => report.error)).toEqual([]);
  });

  it('(b) a master SIGKILLed: its replica takes over, the loss is bounded, nothing counted twice', async () => {
    const run = await startRun('s6-kill');
    const { tally } = run;
    const victim = await nodes.attachNode(run.victim);
    killed.push(victim);
    const caughtUpAt = await nodes.replicaCaughtUp(run.victim, run.replica);
    await nodes.killNode(victim);
    const killedAt = Date.now();
    await nodes.waitForPromotion(run.replica);
    const promotedAt = Date.now();
    await sleep(AFTER_MS);
    const { reports, final, figures, end, ledgerRows, statuses } = await finish(run);

    const bound = lossBound(tally, caughtUpAt, promotedAt, run.onVictim);
    const overBound = lossesOverBound(run, end, bound);
    const outage = tally.select(
      (i) => i.settledAt >= killedAt && i.settledAt <= promotedAt && run.onVictim(targetKey(i.target)),
    );
    const after = reports.filter((report) => report.startedAt > promotedAt && !report.error);
    const details = {
      seed: run.seed,
      victimMaster: run.victim,
      promoted: run.replica,
      victimTargets: run.victimTargets,
      failoverMs: promotedAt - killedAt,
      lossBound: sum(bound),
      failedOnVictimDuringFailover: outage.filter((i) => i.outcome !== 'acknowledged').length,
      acknowledgedOnVictimDuringFailover: outage.filter((i) => i.outcome === 'acknowledged').length,
      refused: tally.calls.refused,
      errors: errorNames(tally.errors),
      flushErrors: flushErrorNames(reports),
      flushesAfterFailover: after.length,
      batchesAfterFailover: total(after, 'batches'),
      recoveredBatches: total([...reports, ...final], 'recoveredBatches'),
      batchesApplied: total([...reports, ...final], 'batches'),
      ledgerRows,
      redisDataLossDetected: statuses.some((status) => status.lastRedisDataLoss !== null),
    };
    run.chaos.record('6b cluster master killed', figures, details);

    expect(figures).toMatchObject({ duplicated: 0, backwards: 0 });
    expect(overBound, 'targets that lost more than was acknowledged on the master since its replica caught up').toEqual(
      [],
    );
    expect(figures.lost).toBeLessThanOrEqual(details.lossBound);
    // Increments to the dead master's slots failed, and only as an unavailable store.
    expect(details.failedOnVictimDuringFailover).toBeGreaterThan(0);
    expect(Object.keys(details.errors)).toEqual(['CounterStoreUnavailableError']);
    expect(details.batchesAfterFailover, 'batches flushed after the promotion').toBeGreaterThan(0);
    expect(ledgerRows).toBe(details.batchesApplied);
    expect(final.filter((report) => report.error)).toEqual([]);
  });

  it('(c) a replica stops confirming while a batch is claimed, then its master dies: no batch applied twice', async () => {
    const run = await startRun('s6-lagging');
    const { tally, loops, deployment } = run;
    // From here the parent decides when to flush: one flush while the replica is paused.
    await loops.pause();
    const victim = await nodes.attachNode(run.victim);
    const caughtUpAt = await nodes.replicaCaughtUp(run.victim, run.replica);
    await nodes.pauseReplica(run.replica, REPLICA_PAUSE_MS);
    const pausedAt = Date.now();
    await sleep(200);
    const lagged = await run.workers[0].flush();
    const claimedOnMaster = await nodes.batchIdsOn(run.victim, deployment.prefix);
    const writtenWhileLagging = await Promise.all(claimedOnMaster.map((id) => batchInLedger(deployment.observer, id)));
    killed.push(victim);
    await nodes.killNode(victim);
    const killedAt = Date.now();
    loops.resume();
    await nodes.waitForPromotion(run.replica);
    const promotedAt = Date.now();
    await sleep(AFTER_MS);
    const { reports, final, figures, end, ledgerRows, statuses } = await finish(run, [lagged]);

    const bound = lossBound(tally, caughtUpAt, promotedAt, run.onVictim);
    const overBound = lossesOverBound(run, end, bound);
    const claimedInLedgerAfter = (
      await Promise.all(claimedOnMaster.map((id) => batchInLedger(deployment.observer, id)))
    ).filter(Boolean);
    const whilePaused = tally.select(
      (i) => i.settledAt >= pausedAt && i.settledAt < killedAt && run.onVictim(targetKey(i.target)),
    );
    const details = {
      seed: run.seed,
      victimMaster: run.victim,
      promoted: run.replica,
      victimTargets: run.victimTargets,
      laggedFlushError: lagged.error?.name ?? 'none',
      laggedFlushFailedShards: lagged.failedShards,
      claimedOnMasterUnconfirmed: claimedOnMaster.length,
      incrementsOnVictimWhilePaused: whilePaused.length,
      failedOnVictimWhilePaused: whilePaused.filter((i) => i.outcome !== 'acknowledged').length,
      killedWhileReplicaPaused: killedAt < pausedAt + REPLICA_PAUSE_MS,
      pausedToKilledMs: killedAt - pausedAt,
      failoverMs: promotedAt - killedAt,
      lossBound: sum(bound),
      claimedBatchesInLedgerAfter: claimedInLedgerAfter.length,
      refused: tally.calls.refused,
      errors: errorNames(tally.errors),
      flushErrors: flushErrorNames(reports),
      recoveredBatches: total([...reports, ...final], 'recoveredBatches'),
      batchesApplied: total([...reports, ...final], 'batches'),
      ledgerRows,
      redisDataLossDetected: statuses.some((status) => status.lastRedisDataLoss !== null),
    };
    run.chaos.record('6c replica lagging, master killed', figures, details);

    // The claim's WAIT saw no replica confirm: the flush failed, the batch stayed claimed on the master,
    // unwritten.
    expect(['CounterReplicationLagError', 'CounterStoreUnavailableError']).toContain(details.laggedFlushError);
    expect(details.laggedFlushFailedShards).toBeGreaterThan(0);
    expect(details.claimedOnMasterUnconfirmed).toBeGreaterThan(0);
    expect(writtenWhileLagging.filter(Boolean)).toEqual([]);
    expect(details.killedWhileReplicaPaused).toBe(true);
    expect(figures).toMatchObject({ duplicated: 0, backwards: 0 });
    expect(overBound, 'targets that lost more than was acknowledged on the master since its replica caught up').toEqual(
      [],
    );
    expect(figures.lost).toBeLessThanOrEqual(details.lossBound);
    expect(ledgerRows).toBe(details.batchesApplied);
    expect(final.filter((report) => report.error)).toEqual([]);
  });
});

/** Restarts what was killed, gives the original masters their role back; a fresh cluster if that fails. */
async function healCluster(killed: RedisServer[], original: nodes.NodeRole[]): Promise<void> {
  try {
    for (const node of killed) await nodes.restartNode(node);
    await nodes.restoreRoles(original);
  } catch (error) {
    console.warn(`scenario 6: could not restore the cluster node by node (${(error as Error).message}); recreating it`);
    await nodes.recreateCluster();
  }
}

function mostTargets(masters: number[]): number {
  const counts = new Map<number, number>();
  for (const port of masters) counts.set(port, (counts.get(port) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0][0];
}

/**
 * Per target of the victim: the deltas acknowledged from `since` (the replica last seen caught up) to
 * `until` (the replica seen promoted; no reply of the dead master can come later), which the promoted
 * replica may lack.
 */
function lossBound(
  tally: TimedDeltas,
  since: number,
  until: number,
  onVictim: (key: string) => boolean,
): Map<string, number> {
  return TimedDeltas.byTarget(
    tally.select(
      (i) =>
        i.outcome === 'acknowledged' && i.settledAt >= since && i.settledAt <= until && onVictim(targetKey(i.target)),
    ),
  );
}

/** Targets whose loss exceeds their bound (0 for targets of the other masters), as `key: lost > bound`. */
function lossesOverBound(run: Run, end: Map<string, number>, bound: Map<string, number>): string[] {
  return run.targets.flatMap((target) => {
    const key = targetKey(target);
    const lost = run.tally.acknowledged(target) - (end.get(key)! - run.start.get(key)!);
    const allowed = bound.get(key) ?? 0;
    return lost > allowed ? [`${key}: lost ${lost} > ${allowed}`] : [];
  });
}

const sum = (values: Map<string, number>) => [...values.values()].reduce((a, b) => a + b, 0);
const errorNames = (errors: Map<string, number>) => Object.fromEntries(errors);
function flushErrorNames(reports: WireFlushReport[]): Record<string, number> {
  const names: Record<string, number> = {};
  for (const report of reports) if (report.error) names[report.error.name] = (names[report.error.name] ?? 0) + 1;
  return names;
}
