import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterRedisHandle } from '../../lib/redis/counter-redis.handle.js';
import { tapClusterNodes, type SentCommand } from '../../support/command-tap.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { Article, ArticleBeforeViewCount } from '../fixtures/entities.js';
import { RedisCluster } from '../../support/redis-cluster.js';
import { uniquePrefix } from '../../support/redis.js';
import { insertArticles } from '../../support/rows.js';
import { claimedBatchId, replicasAwaited, scriptOf, scriptsBySha } from '../support/script-calls.js';
import { TOPOLOGIES } from '../support/topologies.js';

/** How long the module may take to notice a replica the server lists (a periodic slot refresh, say). */
const NOTICE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// On a cluster a claim must reach its node's replicas before the batch is written (FlushStore.claim):
// a replica promoted without it would still hold the deltas as pending and flush them again (G1, G5).
// A replica is not always there when the module connects: Redis 7 lists it in CLUSTER SLOTS only after
// its first sync, seconds after it joined (a new cluster, a replica added or replaced after a failover).
// The claims that follow must wait for it too.
const onCluster = describe.runIf(TOPOLOGIES.includes('cluster'));

onCluster('claims on a cluster whose replica is listed after the module connected', () => {
  const prefix = uniquePrefix('replica');
  const sent: SentCommand[] = [];
  let cluster: RedisCluster;
  let database: TestDatabase;
  let counter: CounterApp;
  let untap: (() => void) | undefined;
  let listedAtConnect: boolean;
  let scripts: Map<string, string>;

  beforeAll(async () => {
    cluster = await RedisCluster.start();
    database = await createTestDatabase(DATABASES[0]);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      counter: { redis: { clusterNodes: cluster.nodes }, shards: 1 },
    });
    listedAtConnect = await cluster.replicaListed();
    const client = counter.app.get(CounterRedisHandle).client as Cluster;
    scripts = scriptsBySha();
    // On each node connection: a WAIT may be sent on the master's own connection, not routed by the cluster.
    untap = tapClusterNodes(client, (command) => sent.push(command));
  });

  afterAll(async () => {
    untap?.();
    await counter?.close();
    await database?.drop();
    await cluster?.stop();
  });

  async function untilReplicaListed(): Promise<void> {
    const listedBy = Date.now() + 30_000;
    while (!(await cluster.replicaListed())) {
      if (Date.now() > listedBy) throw new Error('the replica was not listed within 30 s');
      await sleep(200);
    }
  }

  it('follows each claim with WAIT for the replica once the server lists it', async () => {
    // The case under test: the module connected while the replica was not listed yet.
    expect(listedAtConnect).toBe(false);
    await untilReplicaListed();

    const [id] = await insertArticles(counter.dataSource, [0]);
    const deadline = Date.now() + NOTICE_MS;
    let waits: Array<number | null>;
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

  // An instance deployed before a counter was added gives that counter's changes back before it writes
  // its batch (give-back.script.ts). The give-back must reach the replica before the write as the claim
  // did: a replica promoted without it still holds them in the batch, which the ledger then has, so a
  // recovering flusher would acknowledge it and they would be lost.
  it('follows a give-back with WAIT for the replica before the batch is acknowledged', async () => {
    await untilReplicaListed();
    const older = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      synchronize: false,
      entities: [ArticleBeforeViewCount],
      counter: { redis: { clusterNodes: cluster.nodes }, shards: 1 },
    });
    const olderClient = older.app.get(CounterRedisHandle).client as Cluster;
    const olderSent: SentCommand[] = [];
    const untapOlder = tapClusterNodes(olderClient, (command) => olderSent.push(command));
    try {
      const [id] = await insertArticles(counter.dataSource, [0]);
      const olderScripts = scriptsBySha();
      const deadline = Date.now() + NOTICE_MS;
      let afterGiveBack: Array<number | null> = [];
      for (;;) {
        expect(await counter.counters.increment(Article, id, 'view_count', 3)).toBeGreaterThan(0);
        expect(await counter.counters.increment(Article, id, 'like_count', 1)).toBeGreaterThan(0);
        olderSent.length = 0;
        expect((await older.counters.flush()).error).toBeUndefined();
        afterGiveBack = [];
        for (const [index, command] of olderSent.entries()) {
          if (scriptOf(command, olderScripts) !== 'nestjsCounterGiveBack') continue;
          // The give-back names its batch id after KEYS batch, unknown and lease.
          afterGiveBack.push(replicasAwaited(olderSent, index, command.args[5], olderScripts));
        }
        expect(afterGiveBack).toHaveLength(1);
        if (afterGiveBack[0] === 1 || Date.now() > deadline) break;
        await sleep(250);
      }
      expect(afterGiveBack).toEqual([1]);
    } finally {
      untapOlder();
      await older.close();
    }
  });
});
