import { Cluster, Redis, type ClusterOptions } from 'ioredis';
import type { CounterRedisConnection } from '../../lib/index.js';
import { DATABASES, type DatabaseName } from '../../support/databases.js';
import { CLUSTER_NODES, localClusterClient } from '../../support/local-cluster.js';
import { REDIS_URL, RESP2, testRedis } from '../../support/redis.js';

/** The Redis deployments the suite runs against: one server, or a Redis Cluster (DESIGN.md, G5). */
export type Topology = 'standalone' | 'cluster';

export const TOPOLOGIES: Topology[] = (process.env.COUNTER_TEST_TOPOLOGIES ?? 'standalone,cluster')
  .split(',')
  .map((name) => name.trim())
  .filter((name) => name !== '')
  .map((name) => {
    if (name !== 'standalone' && name !== 'cluster') {
      throw new Error(`COUNTER_TEST_TOPOLOGIES: unknown topology "${name}" (use standalone, cluster or both)`);
    }
    return name;
  });

/** One database and one topology. */
export interface SuiteTarget {
  database: DatabaseName;
  topology: Topology;
}

/**
 * Every database with every topology, as `[database, topology]` for
 * `describe.each(TARGETS)('… on %s, %s', (database, topology) => …)`: names read "… on postgres, cluster".
 */
export const TARGETS: Array<[DatabaseName, Topology]> = DATABASES.flatMap((database) =>
  TOPOLOGIES.map((topology): [DatabaseName, Topology] => [database, topology]),
);

/** The `redis` option of CounterModule for a topology: the module creates (and closes) the client. */
export function counterRedisOption(topology: Topology): CounterRedisConnection {
  return topology === 'cluster' ? { clusterNodes: CLUSTER_NODES } : REDIS_URL;
}

/**
 * Settings with which the module trusts a Cluster it is given (no warning): nothing queued while
 * disconnected, nothing resent after a failover.
 */
const FAIL_FAST_CLUSTER: ClusterOptions = {
  enableOfflineQueue: false,
  retryDelayOnFailover: 0,
  redisOptions: { ...RESP2, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 },
};

/**
 * A client the test creates and hands to CounterModule (`redis: client`), so that it can watch or
 * cut the module's traffic. RESP2, like `testRedis()`, so replies read the same on both topologies.
 */
export function moduleClient(topology: Topology): Redis | Cluster {
  return topology === 'cluster' ? new Cluster(CLUSTER_NODES, FAIL_FAST_CLUSTER) : new Redis(REDIS_URL, RESP2);
}

/** A client of the test's own for inspecting keys (any node of a cluster answers for any key). */
export function inspectionClient(topology: Topology): Redis | Cluster {
  return topology === 'cluster' ? localClusterClient() : testRedis();
}

/** A client that can never connect: standalone on a closed port, or a cluster whose nodes are all down. */
export function unreachableClient(topology: Topology): Redis | Cluster {
  const port = 6399;
  const client =
    topology === 'cluster'
      ? new Cluster([{ host: '127.0.0.1', port }], {
          ...FAIL_FAST_CLUSTER,
          lazyConnect: true,
          clusterRetryStrategy: () => null,
        })
      : new Redis(`redis://127.0.0.1:${port}`, {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          enableOfflineQueue: false,
          retryStrategy: () => null,
        });
  client.on('error', () => undefined);
  return client;
}
