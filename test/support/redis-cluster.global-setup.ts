import { startLocalCluster, stopLocalCluster } from '../../support/local-cluster.js';
import { TOPOLOGIES } from './topologies.js';

/**
 * The specs parametrised by topology need the local Redis Cluster. A fresh clone has none running, so
 * the run starts it (and stops it afterwards); a cluster that cannot be started fails the run, in CI
 * and elsewhere: skipping the cluster tests silently would report a green run that tested less.
 */
export async function setup(): Promise<void> {
  if (!TOPOLOGIES.includes('cluster')) return;
  await startLocalCluster(
    process.env.CI === 'true' ? '' : ' To run without it, set COUNTER_TEST_TOPOLOGIES=standalone.',
  );
}

export const teardown = stopLocalCluster;
