import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freeClusterPorts } from './free-port.js';
import { RedisServer } from './redis-server.js';

export interface RedisClusterOptions {
  /** The server binary of both nodes: SERVER_BINARY unless given (see `RedisServerOptions.binary`). */
  binary?: string;
  /** More server arguments for both nodes (`--appendonly yes`, say); given after the cluster's own. */
  args?: string[];
  /**
   * `cluster-node-timeout`: how long a node may not answer before the other marks it failing (and
   * `CLUSTER SLOTS` leaves a failed replica out). @default 3000
   */
  nodeTimeoutMs?: number;
}

/**
 * A Redis Cluster of the caller's own: one master holding every slot and one replica, each a
 * `RedisServer` on a free loopback port, for a test that needs a cluster in a state the local one
 * (local-cluster.ts) is not in, such as a replica that has not finished its first sync.
 */
export class RedisCluster {
  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer,
  ) {}

  get nodes(): Array<{ host: string; port: number }> {
    return [{ host: '127.0.0.1', port: this.master.port }];
  }

  /**
   * Starts both nodes and joins them; resolves once both report cluster_state:ok, without waiting for
   * the replica's first sync (Redis delays it by repl-diskless-sync-delay, 5 s by default).
   */
  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const ports = await freeClusterPorts(2);
    const timeout = String(options.nodeTimeoutMs ?? 3_000);
    const clusterArgs = [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      'nodes.conf',
      '--cluster-node-timeout',
      timeout,
    ];
    const nodes = await Promise.all(
      ports.map((port) =>
        RedisServer.start({ port, binary: options.binary, args: [...clusterArgs, ...(options.args ?? [])] }),
      ),
    );
    const cluster = new RedisCluster(nodes[0], nodes[1]);
    try {
      await cluster.join();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** Whether `CLUSTER SLOTS` lists the replica (Redis 7 leaves it out until its first sync is done). */
  async replicaListed(): Promise<boolean> {
    return this.withNode(this.master, async (master) => {
      const ranges = await master.cluster('SLOTS');
      return ranges.length === 1 && ranges[0].length === 4;
    });
  }

  async stop(): Promise<void> {
    await Promise.all([this.master.stop(), this.replica.stop()]);
  }

  private async join(): Promise<void> {
    await this.withNode(this.master, async (master) => {
      await this.withNode(this.replica, async (replica) => {
        const masterId = String(await master.cluster('MYID'));
        await master.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
        await master.cluster('MEET', '127.0.0.1', this.replica.port);
        await until(async () => String(await replica.cluster('NODES')).includes(masterId));
        await replica.cluster('REPLICATE', masterId);
        const ok = async (node: Redis) => String(await node.cluster('INFO')).includes('cluster_state:ok');
        await until(async () => (await ok(master)) && (await ok(replica)));
      });
    });
  }

  /** A connection to one node, closed after `use`. */
  private async withNode<T>(server: RedisServer, use: (node: Redis) => Promise<T>): Promise<T> {
    const node = new Redis({
      host: '127.0.0.1',
      port: server.port,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    try {
      return await use(node);
    } finally {
      node.disconnect();
    }
  }
}

async function until(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`Redis Cluster: not ready within ${timeoutMs} ms`);
    await sleep(50);
  }
}
