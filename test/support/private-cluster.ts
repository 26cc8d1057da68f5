import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freeClusterPorts } from './free-port.js';

/**
 * A Redis Cluster of the test's own: one master holding every slot and one replica, on free loopback
 * ports, for a test that needs a cluster in a state the shared one (scripts/redis-cluster.sh) is not
 * in, such as a replica that has not finished its first sync.
 */
export class PrivateCluster {
  private constructor(
    private readonly processes: ChildProcess[],
    private readonly directory: string,
    readonly masterPort: number,
    readonly replicaPort: number,
  ) {}

  get nodes(): Array<{ host: string; port: number }> {
    return [{ host: '127.0.0.1', port: this.masterPort }];
  }

  /**
   * Starts both nodes and joins them; resolves once both report cluster_state:ok, without waiting for
   * the replica's first sync (Redis delays it by repl-diskless-sync-delay, 5 s by default).
   */
  static async start(): Promise<PrivateCluster> {
    const directory = mkdtempSync(join(tmpdir(), 'nestjs-counter-private-cluster-'));
    const ports = await freeClusterPorts(2);
    const processes = ports.map((port) => {
      const node = [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        directory,
        '--save',
        '',
        '--appendonly',
        'no',
      ];
      const clustered = ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`];
      clustered.push('--cluster-node-timeout', '3000');
      return spawn('redis-server', [...node, ...clustered], { stdio: 'ignore' });
    });
    const cluster = new PrivateCluster(processes, directory, ports[0], ports[1]);
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
    return this.withNode(this.masterPort, async (master) => {
      const ranges = await master.cluster('SLOTS');
      return ranges.length === 1 && ranges[0].length === 4;
    });
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.processes.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        return exited;
      }),
    );
    rmSync(this.directory, { recursive: true, force: true });
  }

  private async join(): Promise<void> {
    await this.withNode(this.masterPort, async (master) => {
      await this.withNode(this.replicaPort, async (replica) => {
        const masterId = String(await master.cluster('MYID'));
        await master.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
        await master.cluster('MEET', '127.0.0.1', this.replicaPort);
        await until(async () => String(await replica.cluster('NODES')).includes(masterId));
        await replica.cluster('REPLICATE', masterId);
        const ok = async (node: Redis) => String(await node.cluster('INFO')).includes('cluster_state:ok');
        await until(async () => (await ok(master)) && (await ok(replica)));
      });
    });
  }

  /** A connection to one node (retried while the node starts), closed after `use`. */
  private async withNode<T>(port: number, use: (node: Redis) => Promise<T>): Promise<T> {
    let node: Redis | undefined;
    await until(async () => {
      const attempt = new Redis({
        host: '127.0.0.1',
        port,
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      // Refused until the server listens: connect() rejects with it, no need for ioredis to print it too.
      attempt.on('error', () => undefined);
      const connected = await attempt.connect().then(
        () => true,
        () => false,
      );
      if (connected) node = attempt;
      else attempt.disconnect();
      return connected;
    });
    try {
      return await use(node!);
    } finally {
      node!.disconnect();
    }
  }
}

async function until(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`private cluster: not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
