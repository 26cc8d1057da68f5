import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freeClusterPorts } from '../../support/free-port.js';
import { RedisServer } from '../../support/redis-server.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/redis-cluster.sh', import.meta.url));

/** Leaves in `directory` a dump.rdb holding one key, as a replica's last full sync leaves one. */
async function leaveDumpWithKey(directory: string): Promise<void> {
  // The last --dir given wins: the server saves where the cluster node will start.
  const server = await RedisServer.start({ args: ['--dir', directory] });
  const client = new Redis(server.url);
  try {
    await client.set('left-behind', '1');
    await client.save();
  } finally {
    client.disconnect();
    await server.stop();
  }
}

/**
 * The script CI starts the tests' cluster with, run on ports and in a folder of this test's own. It once
 * failed in CI (`--cluster create` refused a node as "not empty"): a run that never reached `stop` had
 * left a replica's dump.rdb in a node's directory, and the node loaded it.
 */
describe('scripts/redis-cluster.sh', () => {
  let directory: string;
  let ports: number[];
  const script = (command: 'start' | 'stop') =>
    spawnSync('bash', [SCRIPT, command], {
      env: { ...process.env, REDIS_CLUSTER_DIR: directory, REDIS_CLUSTER_PORTS: ports.join(' ') },
      encoding: 'utf8',
      timeout: 110_000,
    });

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'nestjs-counter-cluster-script-'));
    ports = await freeClusterPorts(6);
  });

  afterAll(() => {
    if (ports) script('stop');
    rmSync(directory, { recursive: true, force: true });
  });

  it('starts a cluster over the node directories a killed run left behind', async () => {
    const first = join(directory, String(ports[0]));
    mkdirSync(first, { recursive: true });
    await leaveDumpWithKey(first);
    writeFileSync(join(first, 'nodes.conf'), 'a cluster configuration of another run\n');

    const started = script('start');
    expect(started.status, `${started.stdout}\n${started.stderr}`).toBe(0);

    for (const port of ports) {
      const node = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 });
      try {
        await node.connect();
        expect(String(await node.cluster('INFO'))).toContain('cluster_state:ok');
        // Nothing of the dump: every node, the one that found it included, starts empty.
        expect(await node.dbsize()).toBe(0);
      } finally {
        node.disconnect();
      }
    }
    // Three masters, each with its replica, as the tests' cluster.
    const admin = new Redis({ host: '127.0.0.1', port: ports[0], lazyConnect: true });
    try {
      await admin.connect();
      const roles = String(await admin.cluster('NODES'))
        .trim()
        .split('\n')
        .map((line) => (line.includes('master') ? 'master' : 'replica'));
      expect(roles.filter((role) => role === 'master')).toHaveLength(3);
      expect(roles.filter((role) => role === 'replica')).toHaveLength(3);
    } finally {
      admin.disconnect();
    }
  });
});
