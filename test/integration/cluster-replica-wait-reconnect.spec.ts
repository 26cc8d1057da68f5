import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESSAGES } from '../../lib/counter.messages.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { RedisCluster } from '../../support/redis-cluster.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';
import { insertArticles } from '../../support/rows.js';
import { Article } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { expectClaimLeftClaimed, expectWrittenByNextFlush } from '../support/late-claims.js';
import { WAITAOF_SERVER, waitAofServerMissing } from '../../support/waitaof-server.js';

/** The replicas' WAIT: half the default redisCommandTimeoutMs (1000). */
const REPLICA_WAIT_MS = 500;

/** The id of the master's client blocked in WAIT, once there is one (within the WAIT's time). */
async function blockedInWait(master: Redis): Promise<string> {
  const deadline = Date.now() + REPLICA_WAIT_MS;
  for (;;) {
    const clients = String(await master.client('LIST'));
    const line = clients.split('\n').find((entry) => / cmd=wait\b/.test(entry));
    const id = line && /\bid=(\d+)/.exec(line)?.[1];
    if (id) return id;
    if (Date.now() > deadline) throw new Error('no client blocked in WAIT');
    await sleep(10);
  }
}

/**
 * Whether this ioredis lets a cluster's node connections reconnect (`clusterNodeRetryStrategy`, ioredis
 * 6): with ioredis 5 they never do, so no WAIT is ever resent on a new connection.
 */
function nodeConnectionsReconnect(): boolean {
  const probe = new Cluster([], { lazyConnect: true });
  const supported = 'clusterNodeRetryStrategy' in probe.options;
  probe.disconnect();
  if (!supported) console.warn('This ioredis has no clusterNodeRetryStrategy: no WAIT can be resent; skipped.');
  return supported;
}

const missing = waitAofServerMissing();

// WAIT confirms the writes of the connection it goes on, and Redis 7.2+ and Valkey count those of a
// connection made since from offset 0: a WAIT resent after a reconnection (or sent on a connection made
// after the writes) confirms at once writes it never carried. So it counts only on a connection connected
// since before the claim was sent and still connected when it answers, the rule AofWaitLanes keeps for
// WAITAOF (coversWritesSentAt); otherwise it is late, and the batch stays claimed for a later flush.
// Shown with a client the app hands over whose node connections reconnect and resend what was in flight
// (ioredis's defaults with clusterNodeRetryStrategy). Redis 7.0 counts from the server's offset at the
// connection's previous command (the ready check's INFO), so there the resent WAIT waits all the same.
describe.skipIf(missing !== undefined || !nodeConnectionsReconnect())(
  `a replica WAIT resent after its connection reconnected, on ${WAITAOF_SERVER}`,
  () => {
    let cluster: RedisCluster;
    let master: Redis;
    let client: Cluster;
    let database: TestDatabase;
    let counter: CounterApp;

    beforeAll(async () => {
      // A replica stopped for a while stays listed (a failed one would leave CLUSTER SLOTS).
      cluster = await RedisCluster.start({
        binary: WAITAOF_SERVER,
        args: ['--repl-diskless-sync-delay', '0'],
        nodeTimeoutMs: 30_000,
      });
      const listedBy = Date.now() + 30_000;
      while (!(await cluster.replicaListed())) {
        if (Date.now() > listedBy) throw new Error('the replica was not listed within 30 s');
        await sleep(100);
      }
      master = new Redis({ host: '127.0.0.1', port: cluster.master.port, ...RESP2 });
      // Not an object literal: ioredis 5's ClusterOptions (the oldest stack's) lacks the option.
      const reconnecting = { lazyConnect: false, clusterNodeRetryStrategy: () => 50 };
      client = new Cluster(cluster.nodes, reconnecting);
      database = await createTestDatabase(DATABASES[0]);
      counter = await startCounterApp({
        database: database.options,
        keyPrefix: uniquePrefix('replica-reconnect'),
        redis: client,
        counter: { shards: 1, flushOnShutdown: false },
      });
    });
    afterAll(async () => {
      if (cluster?.replica.pid) process.kill(cluster.replica.pid, 'SIGCONT');
      await counter?.close();
      client?.disconnect();
      master?.disconnect();
      await database?.drop();
      await cluster?.stop();
    });

    it('counts as late: the batch stays claimed, and a later flush writes it once', async () => {
      const [id] = await insertArticles(counter.dataSource, [10]);
      expect(await counter.counters.increment(Article, id, 'like_count', 5)).toBe(15);
      // The module knows the replica: its claims wait for it.
      expect(client.slots[0]).toHaveLength(2);

      // The replica acknowledges nothing: the claim's WAIT blocks until its connection is killed.
      process.kill(cluster.replica.pid, 'SIGSTOP');
      const monitor = await master.duplicate().monitor();
      const waits: string[][] = [];
      monitor.on('monitor', (_time: string, [command, ...args]: string[]) => {
        if (command.toLowerCase() === 'wait') waits.push(args);
      });
      let report: Awaited<ReturnType<typeof counter.counters.flush>>;
      try {
        const flushing = counter.counters.flush();
        expect(await master.client('KILL', 'ID', await blockedInWait(master))).toBe(1);
        report = await flushing;
      } finally {
        process.kill(cluster.replica.pid, 'SIGCONT');
        monitor.disconnect();
      }
      // The WAIT killed, and the same WAIT resent on the new connection.
      expect(waits).toEqual([
        ['1', String(REPLICA_WAIT_MS)],
        ['1', String(REPLICA_WAIT_MS)],
      ]);
      await expectClaimLeftClaimed(counter, report, MESSAGES.claimNotReplicated(0, 1, REPLICA_WAIT_MS), id, 10);
      await expectWrittenByNextFlush(counter, id, 15);
    });
  },
);
