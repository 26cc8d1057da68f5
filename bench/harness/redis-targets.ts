import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import type { CounterRedisConnection } from '../../lib/index.js';
import { CLUSTER_NODES, localClusterClient } from '../../support/local-cluster.js';
import { REDIS_URL, RESP2 } from '../../support/redis.js';

export { REDIS_URL, RESP2 };

export type Topology = 'standalone' | 'cluster';

/** The `redis` option of CounterModule: the module makes the client, with its own fail-fast settings. */
export function redisOption(topology: Topology): CounterRedisConnection {
  return topology === 'cluster' ? { clusterNodes: CLUSTER_NODES } : REDIS_URL;
}

/** A client of the benchmark's own, to inspect or clean up keys. */
export function inspectionClient(topology: Topology): Redis | Cluster {
  return topology === 'cluster' ? localClusterClient() : new Redis(REDIS_URL, RESP2);
}

/** A key prefix of this run alone. */
export const benchPrefix = (label: string) => `bench-${label}-${randomBytes(3).toString('hex')}`;

/** The masters of a cluster (once its slot map is known), or the single server. */
export async function mastersOf(client: Redis | Cluster): Promise<Redis[]> {
  if (!(client instanceof Cluster)) return [client];
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client.nodes('master');
}

/** Deletes every key under a prefix, on every master. */
export async function deleteKeys(client: Redis | Cluster, prefix: string): Promise<void> {
  for (const node of await mastersOf(client)) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      // One slot per UNLINK on a cluster: delete key by key, pipelined.
      if (keys.length > 0) {
        const pipeline = node.pipeline();
        for (const key of keys) pipeline.unlink(key);
        await pipeline.exec();
      }
    } while (cursor !== '0');
  }
}
