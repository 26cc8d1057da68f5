// The local Redis Cluster (support/local-cluster.ts, 127.0.0.1:7000-7005) seen and handled node by
// node, for failover scenarios: who is master of what, killing a node's process, starting it again with
// its own port, directory and nodes.conf (it rejoins as a replica of whoever took its slots), and putting
// the cluster back as it was: every node up, cluster_state:ok everywhere, three replicas in sync, and
// the original masters master again, so that the rest of the suite finds the cluster it expects.
import { Redis } from 'ioredis';
import { CLUSTER_NODES, recreateLocalCluster } from '../../support/local-cluster.js';
import { RESP2 } from '../../support/redis.js';
import { RedisServer } from '../../support/redis-server.js';
import { sleep } from './time.js';

const HOST = '127.0.0.1';
export const CLUSTER_PORTS = CLUSTER_NODES.map((node) => node.port);

export interface NodeRole {
  port: number;
  role: 'master' | 'replica';
  /** For a replica: its master's port. */
  masterPort?: number;
}

/** A short-lived connection to one node; never retries, never queues. */
async function onNode<T>(port: number, use: (node: Redis) => Promise<T>, timeoutMs = 1_000): Promise<T> {
  const node = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    ...RESP2,
  });
  node.on('error', () => undefined);
  try {
    await node.connect();
    return await use(node);
  } finally {
    node.disconnect();
  }
}

const infoField = (info: string, field: string) => new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim();

export async function nodeAnswers(port: number): Promise<boolean> {
  return onNode(port, async (node) => (await node.ping()) === 'PONG').catch(() => false);
}

/** The node's own role, from INFO replication. */
export async function roleOf(port: number): Promise<NodeRole> {
  const info = await onNode(port, (node) => node.info('replication'));
  if (infoField(info, 'role') === 'master') return { port, role: 'master' };
  return { port, role: 'replica', masterPort: Number(infoField(info, 'master_port')) };
}

export async function layout(): Promise<NodeRole[]> {
  return Promise.all(CLUSTER_PORTS.map(roleOf));
}

/** The port of the master that serves each slot, as the cluster reports it now (`CLUSTER SLOTS`). */
export async function slotMasters(askPort = CLUSTER_PORTS[0]): Promise<(slot: number) => number> {
  // Each range: start, end, then its master and its replicas as [host, port, id, …].
  const ranges = await onNode(askPort, (node) => node.cluster('SLOTS'));
  return (slot) => {
    const range = ranges.find(([start, end]) => slot >= start && slot <= end);
    if (!range?.[2]) throw new Error(`no node serves slot ${slot}`);
    return Number(range[2][1]);
  };
}

/** The replica attached to a master (the local cluster has one per master). */
export async function replicaOf(masterPort: number): Promise<number> {
  const replica = (await layout()).find((node) => node.masterPort === masterPort);
  if (!replica) throw new Error(`master ${masterPort} has no replica`);
  return replica.port;
}

/**
 * The node on `port` as a `RedisServer`, with the settings it was started with read from the node
 * itself, so that `restartNode` starts it again with its own directory and nodes.conf.
 */
export async function attachNode(port: number): Promise<RedisServer> {
  return RedisServer.attach(port, [
    'cluster-enabled',
    'cluster-config-file',
    'cluster-node-timeout',
    'dir',
    'logfile',
    'pidfile',
    'save',
    'appendonly',
  ]);
}

/** SIGKILL: the node dies at once, with whatever it had not replicated. Resolves once the port is closed. */
export async function killNode(node: RedisServer): Promise<void> {
  await node.kill('SIGKILL');
  await waitFor(`node ${node.port} gone`, 5_000, async () => !(await nodeAnswers(node.port)));
}

/**
 * Starts a killed node again from its own directory and nodes.conf. The rest of the cluster has given
 * its slots to its replica: it comes back as that replica's replica and syncs in full (no persistence).
 * Its new master is told not to wait the usual 5 s before that sync; the setting is put back after.
 */
export async function restartNode(server: RedisServer): Promise<void> {
  if (await nodeAnswers(server.port)) return;
  const masters = (
    await Promise.all(
      CLUSTER_PORTS.filter((port) => port !== server.port).map((port) => roleOf(port).catch(() => undefined)),
    )
  )
    .filter((node) => node?.role === 'master')
    .map((node) => node!.port);
  const delays = await Promise.all(
    masters.map((port) => onNode(port, (node) => node.config('GET', 'repl-diskless-sync-delay')) as Promise<string[]>),
  );
  await Promise.all(masters.map((port) => onNode(port, (node) => node.config('SET', 'repl-diskless-sync-delay', '0'))));
  try {
    await server.restart();
    await waitUntilHealthy();
  } finally {
    await Promise.all(
      masters.map((port, i) =>
        onNode(port, (node) => node.config('SET', 'repl-diskless-sync-delay', delays[i][1] ?? '5')).catch(
          () => undefined,
        ),
      ),
    );
  }
}

/** A graceful failover: the replica takes over its master's slots once it has every write. */
export async function failoverTo(replicaPort: number): Promise<void> {
  const before = await roleOf(replicaPort);
  if (before.role !== 'replica') throw new Error(`node ${replicaPort} is not a replica`);
  await onNode(replicaPort, (node) => node.cluster('FAILOVER'));
  await waitFor(`node ${replicaPort} promoted`, 15_000, async () => (await roleOf(replicaPort)).role === 'master');
}

/** Waits until `port` reports itself master (an automatic failover after its master died). */
export async function waitForPromotion(port: number, timeoutMs = 20_000): Promise<void> {
  await waitFor(
    `node ${port} promoted`,
    timeoutMs,
    async () => (await roleOf(port).catch(() => undefined))?.role === 'master',
  );
}

/**
 * What the suite needs from the cluster: every node up and saying cluster_state:ok, each seeing three
 * masters and three replicas without a failure flag and listing a replica for every slot range, and
 * every replica's link to its master up. Returns what is still wrong, or undefined.
 */
export async function clusterProblem(ports = CLUSTER_PORTS): Promise<string | undefined> {
  for (const port of ports) {
    const problem = await onNode(port, async (node) => {
      const info = String(await node.cluster('INFO'));
      if (infoField(info, 'cluster_state') !== 'ok') return `cluster_state:${infoField(info, 'cluster_state')}`;
      const lines = String(await node.cluster('NODES'))
        .trim()
        .split('\n')
        .map((line) => line.split(' '));
      const odd = lines.filter((fields) => /fail|handshake|noaddr/.test(fields[2]) || fields[7] !== 'connected');
      if (odd.length > 0) return `sees ${odd.map((fields) => `${fields[1]} ${fields[2]} ${fields[7]}`).join(', ')}`;
      const masters = lines.filter((fields) => fields[2].includes('master')).length;
      const replicas = lines.filter((fields) => fields[2].includes('slave')).length;
      if (masters !== ports.length / 2 || replicas !== ports.length / 2)
        return `sees ${masters} masters, ${replicas} replicas`;
      // Redis 7 lists a replica in CLUSTER SLOTS only once its first sync is done; clients (and so the
      // claim's WAIT) know of the replicas from there.
      const ranges = (await node.cluster('SLOTS')) as unknown[][];
      if (ranges.length === 0 || ranges.some((range) => range.length < 4))
        return 'CLUSTER SLOTS lists a range without replica';
      const replication = await node.info('replication');
      if (infoField(replication, 'role') === 'master') return undefined;
      const link = infoField(replication, 'master_link_status');
      return link === 'up' ? undefined : `replica with master_link_status:${link}`;
    }).catch((error: Error) => `unreachable (${error.message})`);
    if (problem) return `node ${port}: ${problem}`;
  }
  return undefined;
}

export async function clusterHealthy(): Promise<boolean> {
  return (await clusterProblem()) === undefined;
}

export async function waitUntilHealthy(timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let problem = await clusterProblem(); problem; problem = await clusterProblem()) {
    if (Date.now() > deadline) throw new Error(`Redis Cluster not healthy within ${timeoutMs} ms: ${problem}`);
    await sleep(100);
  }
}

/**
 * Gives every master of `original` its master role back (a graceful failover from the replica it has
 * become), so that the cluster leaves a scenario laid out as it came.
 */
export async function restoreRoles(original: NodeRole[]): Promise<void> {
  await waitUntilHealthy();
  for (const node of original.filter((entry) => entry.role === 'master')) {
    if ((await roleOf(node.port)).role === 'master') continue;
    await failoverTo(node.port);
    await waitUntilHealthy();
  }
}

/** Everything else failed: a fresh cluster (its nodes are throwaway, without data). */
export async function recreateCluster(): Promise<void> {
  await recreateLocalCluster();
  await waitUntilHealthy();
}

/**
 * The moment up to which a replica is known to hold everything its master ran: the master's
 * replication offset is read at `at`, then the replica's; once the replica has reached it, every command
 * the master ran before `at` is on the replica. Retried until that holds.
 */
export async function replicaCaughtUp(masterPort: number, replicaPort: number, timeoutMs = 5_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const at = Date.now();
    const masterOffset = Number(
      infoField(await onNode(masterPort, (node) => node.info('replication')), 'master_repl_offset'),
    );
    const replicaOffset = Number(
      infoField(await onNode(replicaPort, (node) => node.info('replication')), 'slave_repl_offset'),
    );
    if (replicaOffset >= masterOffset) return at;
    if (Date.now() > deadline) throw new Error(`replica ${replicaPort} never caught up with ${masterPort}`);
    await sleep(5);
  }
}

/** CLIENT PAUSE on a replica: it stops applying (and acknowledging) its master's stream for `ms`. */
export async function pauseReplica(replicaPort: number, ms: number): Promise<void> {
  await onNode(replicaPort, (node) => node.call('CLIENT', 'PAUSE', String(ms), 'ALL'));
}

/** Keys of the batches claimed on one node (`…:batch` hashes keep their id in '#id'), read from that node. */
export async function batchIdsOn(port: number, prefix: string): Promise<string[]> {
  return onNode(port, async (node) => {
    const ids: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*:batch`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const id = await node.hget(key, '#id');
        if (id) ids.push(id);
      }
    } while (cursor !== '0');
    return ids;
  });
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
}
