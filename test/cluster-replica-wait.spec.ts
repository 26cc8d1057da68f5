import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterRedisHandle } from '../lib/redis/redis-connection.js';
import { tapClusterNodes, type SentCommand } from './support/command-tap.js';
import { startCounterApp, type CounterApp } from './support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from './support/databases.js';
import { Article } from './support/entities.js';
import { PrivateCluster } from './support/private-cluster.js';
import { uniquePrefix } from './support/redis.js';
import { insertArticles } from './support/rows.js';
import { claimedBatchId, replicasAwaited, scriptOf, scriptsBySha } from './support/script-calls.js';
import { TOPOLOGIES } from './support/topologies.js';

/** How long the module may take to notice a replica the server lists (a periodic slot refresh, say). */
const NOTICE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// On a cluster a claim must reach its node's replicas before the batch is written (CounterStore.claim):
// a replica promoted without it would still hold the deltas as pending and flush them again (G1, G5).
// A replica is not always there when the module connects: Redis 7 lists it in CLUSTER SLOTS only after
// its first sync, seconds after it joined (a new cluster, a replica added or replaced after a failover).
// The claims that follow must wait for it too.
const onCluster = describe.runIf(TOPOLOGIES.includes('cluster'));

onCluster('claims on a cluster whose replica is listed after the module connected', () => {
  const prefix = uniquePrefix('replica');
  const sent: SentCommand[] = [];
  let cluster: PrivateCluster;
  let database: TestDatabase;
  let counter: CounterApp;
  let untap: (() => void) | undefined;
  let listedAtConnect: boolean;
  let scripts: Map<string, string>;

  beforeAll(async () => {
    cluster = await PrivateCluster.start();
    database = await createTestDatabase(DATABASES[0]);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      counter: { redis: { clusterNodes: cluster.nodes }, shards: 1 },
    });
    listedAtConnect = await cluster.replicaListed();
    const client = counter.app.get(CounterRedisHandle).client as Cluster;
    scripts = scriptsBySha(client);
    // On each node connection: a WAIT may be sent on the master's own connection, not routed by the cluster.
    untap = tapClusterNodes(client, (command) => sent.push(command));
  });

  afterAll(async () => {
    untap?.();
    await counter?.close();
    await database?.drop();
    await cluster?.stop();
  });

  it('follows each claim with WAIT for the replica once the server lists it', async () => {
    // The case under test: the module connected while the replica was not listed yet.
    expect(listedAtConnect).toBe(false);
    const listedBy = Date.now() + 30_000;
    while (!(await cluster.replicaListed())) {
      if (Date.now() > listedBy) throw new Error('the replica was not listed within 30 s');
      await sleep(200);
    }

    const [id] = await insertArticles(counter.dataSource, [0]);
    const deadline = Date.now() + NOTICE_MS;
    let waits: Array<number | null> = [];
    for (let value = 1; ; value++) {
      sent.length = 0;
      expect(await counter.counters.increment(Article, id, 'like_count')).toBe(value);
      expect((await counter.counters.flush()).error).toBeUndefined();
      // The claims that took a batch: the ones whose deltas must reach the replica before the write.
      waits = [];
      for (const [index, command] of sent.entries()) {
        if (scriptOf(command, scripts) !== 'nestjsCounterClaim') continue;
        const batchId = claimedBatchId((await command.outcome).reply);
        if (batchId) waits.push(replicasAwaited(sent, index, batchId, scripts));
      }
      expect(waits).toHaveLength(1);
      if (waits.every((replicas) => replicas === 1) || Date.now() > deadline) break;
      await sleep(250);
    }
    // Within NOTICE_MS of the replica being listed, a flush's claim waits for it.
    expect(waits).toEqual(waits.map(() => 1));
  });
});
