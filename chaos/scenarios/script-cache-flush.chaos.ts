// Chaos scenario 16 (issue 49): the script cache emptied under load. Redis forgets the scripts it was
// given on a restart, a failover to a replica that never ran them, a `SCRIPT FLUSH`, or (7.4+) when it
// evicts scripts loaded by EVAL; a call by SHA is then answered NOSCRIPT. The library must send the
// script again, unseen by its callers: the call was refused without running, so sending it again
// applies it once.
//
// Two instances take plain increments, keyed increments (retried with their key on failure), reads
// (`getMany`) and flushes in a loop, while `SCRIPT FLUSH` (ASYNC and SYNC in turn) runs on every node
// again and again: a private redis-server (standalone), or every master and replica of the local
// cluster. No call fails (no increment, attempt, read or flush sees an error) and the database holds
// exactly start + acknowledged.
import { Redis, type Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { CLUSTER_NODES, localClusterClient, startLocalCluster, stopLocalCluster } from '../../support/local-cluster.js';
import { deleteKeys, RESP2 } from '../../support/redis.js';
import { AcknowledgedDeltas } from '../harness/acknowledged-deltas.js';
import { CHAOS_DATABASES, type ChaosDeployment, type WorkerCounterOptions } from '../harness/chaos-deployment.js';
import type { ChaosWorker } from '../harness/chaos-worker.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { waitUntilHealthy } from '../harness/cluster-nodes.js';
import { insertArticleTargets, readTargets, type CounterTarget } from '../harness/counter-targets.js';
import { total } from '../harness/final-flush.js';
import { FlushLoops } from '../harness/flush-loops.js';
import { readThrough } from '../harness/live-reads.js';
import { privateRedisFor } from '../harness/redis-process.js';
import { sleep } from '../harness/time.js';

const ROWS = 40;
/** Enough shards that every master of the cluster holds some. */
const SHARDS = 16;
const LOAD_BEFORE_MS = 600;
const FLUSHING_MS = 4_000;
/** Between two rounds of SCRIPT FLUSH: many rounds land between a NOSCRIPT and the script sent again. */
const SCRIPT_FLUSH_EVERY_MS = 20;
const LOAD_AFTER_MS = 600;
const FLUSH_LOOP_PAUSE_MS = 20;

type Topology = 'standalone' | 'cluster';

/** Where the workers connect, the nodes whose caches are flushed, and the parent's client for the backlog. */
async function redisFor(topology: Topology, deployment: ChaosDeployment) {
  if (topology === 'standalone') {
    const { server, inspector } = await privateRedisFor(deployment);
    const counter: WorkerCounterOptions = { redis: server.url };
    return { counter, ports: [server.port], inspector: inspector as Redis | Cluster };
  }
  const inspector = localClusterClient();
  deployment.onClose(() => inspector.disconnect());
  const counter: WorkerCounterOptions = { redis: { clusterNodes: CLUSTER_NODES }, shards: SHARDS };
  return { counter, ports: CLUSTER_NODES.map((node) => node.port), inspector: inspector as Redis | Cluster };
}

/** Calls the nodes refused with NOSCRIPT since they started (INFO errorstats). */
async function noscriptReplies(nodes: Redis[]): Promise<number> {
  const stats = await Promise.all(nodes.map((node) => node.info('errorstats')));
  return stats.reduce((sum, text) => sum + Number(/^errorstat_NOSCRIPT:count=(\d+)/m.exec(text)?.[1] ?? 0), 0);
}

/** SCRIPT FLUSH on every node, round after round, until stopped. */
function flushScriptCaches(ports: number[]) {
  const nodes = ports.map((port) => new Redis({ host: '127.0.0.1', port, ...RESP2, maxRetriesPerRequest: 1 }));
  let running = true;
  const rounds = (async () => {
    const before = await noscriptReplies(nodes);
    let round = 0;
    while (running) {
      const mode = round % 2 === 0 ? 'ASYNC' : 'SYNC';
      await Promise.all(nodes.map((node) => node.call('SCRIPT', 'FLUSH', mode)));
      round++;
      await sleep(SCRIPT_FLUSH_EVERY_MS);
    }
    return { round, before };
  })();
  return {
    /** The rounds run, and the calls by SHA the nodes refused with NOSCRIPT meanwhile. */
    async stop(): Promise<{ rounds: number; noscriptReplies: number }> {
      running = false;
      try {
        const { round, before } = await rounds;
        return { rounds: round, noscriptReplies: (await noscriptReplies(nodes)) - before };
      } finally {
        for (const node of nodes) node.disconnect();
      }
    },
  };
}

/** Reads through the workers in turn until stopped: how many, and the errors met, by name and message. */
function readContinuously(workers: ChaosWorker[], targets: CounterTarget[]) {
  let running = true;
  let reads = 0;
  const errors: string[] = [];
  const loop = (async () => {
    while (running) {
      const worker = workers[reads % workers.length];
      try {
        await readThrough(worker, targets);
      } catch (error) {
        errors.push(`${(error as Error).name}: ${(error as Error).message}`);
      }
      reads++;
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { reads, errors };
    },
  };
}

describe.each(CHAOS_DATABASES)('scenario 16: script cache flushed under load, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName, {
    afterClose: async (prefix) => {
      if (!prefix) return;
      const redis = localClusterClient();
      await deleteKeys(redis, prefix).finally(() => redis.disconnect());
    },
  });

  beforeAll(async () => {
    await startLocalCluster();
    await waitUntilHealthy();
  }, 120_000);

  afterAll(() => stopLocalCluster(), 60_000);

  it.each<Topology>(['standalone', 'cluster'])(
    '%s: SCRIPT FLUSH on every node under load reaches no caller; nothing lost or doubled',
    async (topology) => {
      const run = await scenario.deploy(`s16-${topology}`);
      const { deployment, seed } = run;
      const { observer, prefix } = deployment;
      const redis = await redisFor(topology, deployment);
      const keys = topology === 'cluster' ? new CounterKeys(prefix, SHARDS) : undefined;
      const targets = await insertArticleTargets(observer, ROWS, keys);
      const start = await readTargets(observer, targets);
      const workers = await deployment.startWorkers(['a', 'b'], { counter: redis.counter });
      const sampler = deployment.startSampler(targets);
      const tally = new AcknowledgedDeltas();
      const plain = deployment.startLoad({ targets, workers, seed, tally });
      const keyed = deployment.startLoad({ targets, workers, seed: seed + 1, tally, keyed: true, callers: 4 });
      const loops = new FlushLoops(FLUSH_LOOP_PAUSE_MS);
      for (const worker of workers) loops.add(worker);
      deployment.onClose(() => loops.stop());
      const reads = readContinuously(workers, targets);
      await sleep(LOAD_BEFORE_MS);

      const scriptFlushes = flushScriptCaches(redis.ports);
      await sleep(FLUSHING_MS);
      const { rounds, noscriptReplies } = await scriptFlushes.stop();
      await sleep(LOAD_AFTER_MS);

      await Promise.all([plain.stop(), keyed.stop()]);
      const reports = await loops.stop();
      const readResult = await reads.stop();
      const { final, figures } = await run.settle({
        flusher: workers[0],
        targets,
        start,
        tally,
        sampler,
        redis: redis.inspector,
      });
      const flushErrors = [...reports, ...final].filter((report) => report.error).map((report) => report.error!);
      const details = {
        seed,
        nodes: redis.ports.length,
        scriptFlushRounds: rounds,
        noscriptReplies,
        increments: tally.calls.acknowledged,
        keyedAttempts: Object.values(tally.attempts).reduce((sum, count) => sum + count, 0),
        reads: readResult.reads,
        flushes: reports.length,
        batches: total([...reports, ...final], 'batches'),
        errors: [...tally.firstMessages].map(([name, message]) => `${name}: ${message}`).join(' | '),
        readErrors: readResult.errors.length,
        flushErrors: flushErrors.length,
      };
      run.record(`16 script cache flushed (${topology})`, figures, details);

      expect(rounds, 'rounds of SCRIPT FLUSH during the load').toBeGreaterThan(20);
      expect(noscriptReplies, 'calls by SHA the nodes refused with NOSCRIPT').toBeGreaterThan(0);
      expect(details.batches, 'batches flushed').toBeGreaterThan(0);
      expect(Object.fromEntries(tally.firstMessages), 'errors that reached a caller').toEqual({});
      expect(readResult.errors.slice(0, 5), 'reads that failed').toEqual([]);
      expect(flushErrors.slice(0, 5), 'flushes that failed').toEqual([]);
      expect(tally.calls).toMatchObject({ refused: 0, uncertain: 0 });
      expect(tally.attempts).toMatchObject({ refused: 0, uncertain: 0 });
      expect(figures.wrong).toEqual([]);
      expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
      expect(figures.inDatabase).toBe(figures.acknowledged);
    },
  );
});
