import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Cluster, Redis } from 'ioredis';
import { RESP2 } from './redis.js';
import { SERVER_BINARY } from './redis-server.js';

/**
 * The local Redis Cluster the suites share: three masters and three replicas on 127.0.0.1:7000-7005
 * (redis-server's, or COUNTER_REDIS_SERVER's: scripts/on-valkey.sh runs a Valkey one on 7100-7105).
 * scripts/redis-cluster.sh makes it, for this module as for CI and contributors: CI starts it before
 * `npm ci` (nothing of node_modules there yet), and its nodes must outlive the command that starts them,
 * so the script stays a shell script that needs only redis-server and redis-cli. This module starts it
 * when it is not running, waits until clients see it whole, and stops it if it started it.
 * REDIS_CLUSTER_PORTS (six ports, as the script reads it) moves it, for a run with a cluster of its own.
 */
export const CLUSTER_NODES = (process.env.REDIS_CLUSTER_PORTS ?? '7000 7001 7002 7003 7004 7005')
  .trim()
  .split(/\s+/)
  .map((port) => ({ host: '127.0.0.1', port: Number(port) }));

/** A client of the caller's own for the local cluster, to inspect keys (any node answers for any key). */
export function localClusterClient(): Cluster {
  return new Cluster(CLUSTER_NODES, { redisOptions: RESP2 });
}

const WHERE = `127.0.0.1:${CLUSTER_NODES[0].port}-${CLUSTER_NODES[CLUSTER_NODES.length - 1].port}`;

const SCRIPT_NAME = 'scripts/redis-cluster.sh';
/** The script of the repository this file is in: also when it runs compiled (bench/dist/support). */
const SCRIPT =
  ['../', '../../../']
    .map((up) => fileURLToPath(new URL(up + SCRIPT_NAME, import.meta.url)))
    .find((path) => existsSync(path)) ?? SCRIPT_NAME;
/** Longest wait for the replicas' first sync (about 7 s on a fresh local cluster). */
const REPLICA_SYNC_MS = 30_000;
/** Longest wait for a cluster whose nodes disagree to settle (a failover takes a few node timeouts). */
const FAILOVER_MS = 20_000;

type NodeState = 'down' | 'up' | 'ok';

/** A one-shot connection to a node, that fails at once instead of retrying. */
function probe(port: number): Redis {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // A node that is down refuses the connection: connect() rejects with it, no need to print it too.
  client.on('error', () => undefined);
  return client;
}

/** Whether the node answers, and whether it reports `cluster_state:ok`. */
async function nodeState(port: number): Promise<NodeState> {
  const node = probe(port);
  try {
    await node.connect();
  } catch {
    node.disconnect();
    return 'down';
  }
  try {
    return String(await node.cluster('INFO')).includes('cluster_state:ok') ? 'ok' : 'up';
  } catch {
    return 'up';
  } finally {
    node.disconnect();
  }
}

const nodeStates = () => Promise.all(CLUSTER_NODES.map(({ port }) => nodeState(port)));
const allHealthy = async () => (await nodeStates()).every((state) => state === 'ok');

/**
 * Whether `CLUSTER SLOTS` lists a replica for every slot range. Redis 7 leaves a replica out until its
 * first sync is done (seconds after the cluster reports ok), and clients read their slot map from it:
 * a client that connects before would see a cluster without replicas.
 */
async function replicasListed(): Promise<boolean> {
  const node = probe(CLUSTER_NODES[0].port);
  try {
    await node.connect();
    // Each range: start, end, its master, then its replicas.
    const ranges = await node.cluster('SLOTS');
    return ranges.length > 0 && ranges.every((range) => range.length >= 4);
  } catch {
    return false;
  } finally {
    node.disconnect();
  }
}

async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return true;
}

function runScript(command: 'start' | 'stop'): { ok: boolean; output: string } {
  const result = spawnSync('bash', [SCRIPT, command], { encoding: 'utf8', timeout: 120_000 });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}`.trim();
  return { ok: result.status === 0, output };
}

/** Whether this process started the cluster, and so must stop it. */
let startedHere = false;

/**
 * Starts the local cluster unless it runs, and resolves once every node says cluster_state:ok and
 * CLUSTER SLOTS lists a replica for every range. Rejects when it cannot be started; `optOut` ends that
 * message (how the caller can do without the cluster).
 */
export async function startLocalCluster(optOut = ''): Promise<void> {
  let before = await nodeStates();
  // Nodes that answer without agreeing on cluster_state:ok may be in the middle of a failover (another
  // process's test, say): give them the time one takes before trying to start the cluster.
  if (before.some((state) => state !== 'down') && !before.every((state) => state === 'ok')) {
    await waitUntil(allHealthy, FAILOVER_MS);
    before = await nodeStates();
  }
  if (!before.every((state) => state === 'ok')) {
    const { ok, output } = runScript('start');
    if (!ok || !(await allHealthy())) {
      throw new Error(
        `The Redis Cluster on ${WHERE} is not running (or not healthy) and "${SCRIPT_NAME} start" ` +
          `could not start it (it needs ${SERVER_BINARY} and its -cli on the PATH).${optOut}\n${output}`,
      );
    }
    // Nodes that were already up belong to someone else: leave them running afterwards.
    startedHere = before.every((state) => state === 'down');
  }
  if (!(await waitUntil(replicasListed, REPLICA_SYNC_MS))) {
    await stopLocalCluster();
    throw new Error(
      `The Redis Cluster on ${WHERE} lists no replica for some slots after ${REPLICA_SYNC_MS / 1000} s ` +
        `(CLUSTER SLOTS); restart it with "${SCRIPT_NAME} stop" and "${SCRIPT_NAME} start".${optOut}`,
    );
  }
}

/** Stops the local cluster if `startLocalCluster` started it; leaves running what it found running. */
export async function stopLocalCluster(): Promise<void> {
  if (!startedHere) return;
  const { ok, output } = runScript('stop');
  if (!ok) throw new Error(`"${SCRIPT_NAME} stop" failed:\n${output}`);
  startedHere = false;
}

/** Throws the cluster away and makes a fresh one (its nodes are throwaway, without data). */
export async function recreateLocalCluster(): Promise<void> {
  for (const command of ['stop', 'start'] as const) {
    const { ok, output } = runScript(command);
    if (!ok) throw new Error(`"${SCRIPT_NAME} ${command}" failed:\n${output}`);
  }
}
