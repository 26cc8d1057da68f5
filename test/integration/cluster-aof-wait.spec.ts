import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MESSAGES } from '../../lib/counter.messages.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { RedisCluster } from '../../support/redis-cluster.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';
import { WAITAOF_SERVER, waitAofServerMissing, waitAofWaitsForFsync } from '../../support/waitaof-server.js';
import { Article } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { expectClaimLeftClaimed, expectWrittenByNextFlush } from '../support/late-claims.js';
import { scriptsBySha } from '../support/script-calls.js';

/** The replicas' WAIT: half the default redisCommandTimeoutMs (1000). */
const REPLICA_WAIT_MS = 500;

/** The wait for the AOFs (AOF_WAIT_MS). */
const AOF_WAIT_MS = 2_000;

const missing = waitAofServerMissing();

/** The commands a node received, as MONITOR shows them: a library script by its name, others by theirs. */
async function monitor(port: number): Promise<{ seen: Array<{ name: string; args: string[] }>; stop(): void }> {
  const scripts = scriptsBySha();
  const client = new Redis({ port, host: '127.0.0.1', ...RESP2 });
  const watching = await client.monitor();
  const seen: Array<{ name: string; args: string[] }> = [];
  watching.on('monitor', (_time: string, [command, ...args]: string[]) => {
    const name = command.toLowerCase();
    seen.push({ name: (name === 'evalsha' ? scripts.get(args[0]) : undefined) ?? name, args });
  });
  return {
    seen,
    stop: () => {
      watching.disconnect();
      client.disconnect();
    },
  };
}

// Issue 49: on a cluster whose replicas keep an AOF, a claim is written to the database only once the
// master and those replicas have fsynced it (`WAITAOF 1 <replicas>`, scope master-and-replicas), besides
// the replicas' WAIT: a replica promoted after a restart from an AOF without the claim would bring its
// changes back as pending, to be written a second time (G1, G5).
describe.skipIf(missing !== undefined)(`claims on a cluster of ${WAITAOF_SERVER} whose replica keeps an AOF`, () => {
  let cluster: RedisCluster;
  let control: Redis;
  let replicaControl: Redis;
  let exact: boolean;
  let database: TestDatabase;
  let counter: CounterApp;

  beforeAll(async () => {
    cluster = await RedisCluster.start({
      binary: WAITAOF_SERVER,
      args: ['--appendonly', 'yes', '--appendfsync', 'everysec', '--repl-diskless-sync-delay', '0'],
      // A replica stopped for seconds stays listed (a failed one would leave CLUSTER SLOTS).
      nodeTimeoutMs: 30_000,
    });
    const listedBy = Date.now() + 30_000;
    while (!(await cluster.replicaListed())) {
      if (Date.now() > listedBy) throw new Error('the replica was not listed within 30 s');
      await sleep(100);
    }
    control = new Redis({ port: cluster.master.port, host: '127.0.0.1', ...RESP2 });
    replicaControl = new Redis({ port: cluster.replica.port, host: '127.0.0.1', ...RESP2 });
    exact = await waitAofWaitsForFsync(control);
    // Every test is skipped on a server whose WAITAOF answers early: no app to start.
    if (!exact) return;
    database = await createTestDatabase(DATABASES[0]);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: uniquePrefix('cluster-aof'),
      counter: { redis: { clusterNodes: cluster.nodes }, shards: 1, flushOnShutdown: false },
    });
    // Loads the scripts, so that MONITOR shows each call by its SHA.
    const [warm] = await insertArticles(counter.dataSource, [0]);
    await counter.counters.increment(Article, warm, 'like_count');
    expect((await counter.counters.flush()).error).toBeUndefined();
  });
  afterEach(async () => {
    if (cluster?.replica.pid) process.kill(cluster.replica.pid, 'SIGCONT');
    await replicaControl?.config('SET', 'appendfsync', 'everysec');
  });
  afterAll(async () => {
    await counter?.close();
    control?.disconnect();
    replicaControl?.disconnect();
    await database?.drop();
    await cluster?.stop();
  });

  it("waits for the master's and the replica's fsync before the batch is written", async (context) => {
    if (!exact) return context.skip(`${WAITAOF_SERVER}'s WAITAOF answers before the fsync`);
    const [id] = await insertArticles(counter.dataSource, [10]);
    expect(await counter.counters.increment(Article, id, 'like_count', 5)).toBe(15);
    const watching = await monitor(cluster.master.port);
    const report = await counter.counters.flush();
    await sleep(100);
    watching.stop();

    expect(report.error).toBeUndefined();
    expect(report).toMatchObject({ batches: 1, rows: 1, recoveredBatches: 0 });
    expect(await articleCounts(counter.dataSource, [id])).toEqual(new Map([[id, { likes: 15, views: 0 }]]));
    const names = watching.seen.map(({ name }) => name);
    const claim = names.indexOf('nestjsCounterClaim');
    const ack = names.indexOf('nestjsCounterAck');
    const waits = watching.seen.flatMap((seen, at) => (seen.name === 'waitaof' || seen.name === 'wait' ? [at] : []));
    expect(claim).toBeGreaterThanOrEqual(0);
    // The master's AOF and the replica's (it keeps one), and the replica's copy: each after the claim,
    // before the batch's acknowledgement.
    // They go on different connections at once: in either order.
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(waits.map((at) => watching.seen[at]).sort(byName)).toEqual([
      { name: 'wait', args: ['1', String(REPLICA_WAIT_MS)] },
      { name: 'waitaof', args: ['1', '1', String(AOF_WAIT_MS)] },
    ]);
    for (const at of waits) {
      expect(at).toBeGreaterThan(claim);
      expect(at).toBeLessThan(ack);
    }
  });

  it('leaves the batch claimed while the replica has not fsynced it, and writes it once later', async (context) => {
    if (!exact) return context.skip(`${WAITAOF_SERVER}'s WAITAOF answers before the fsync`);
    const [id] = await insertArticles(counter.dataSource, [10]);
    expect(await counter.counters.increment(Article, id, 'like_count', 3)).toBe(13);
    // The replica still copies the claim (WAIT confirms it) but no longer fsyncs its AOF.
    await replicaControl.config('SET', 'appendfsync', 'no');
    const report = await counter.counters.flush();
    await expectClaimLeftClaimed(counter, report, MESSAGES.claimNotFsynced(AOF_WAIT_MS), id, 10);

    await replicaControl.config('SET', 'appendfsync', 'everysec');
    expect(await counter.counters.increment(Article, id, 'like_count', 2)).toBe(15);
    await expectWrittenByNextFlush(counter, id, 15, 2);
  });

  it('leaves the batch claimed while the replica does not acknowledge, and writes it once later', async (context) => {
    if (!exact) return context.skip(`${WAITAOF_SERVER}'s WAITAOF answers before the fsync`);
    const [id] = await insertArticles(counter.dataSource, [10]);
    expect(await counter.counters.increment(Article, id, 'like_count', 4)).toBe(14);
    process.kill(cluster.replica.pid, 'SIGSTOP');
    let report: Awaited<ReturnType<typeof counter.counters.flush>>;
    try {
      report = await counter.counters.flush();
    } finally {
      process.kill(cluster.replica.pid, 'SIGCONT');
    }
    // The WAIT runs out first (REPLICA_WAIT_MS): the replica confirmed nothing.
    await expectClaimLeftClaimed(counter, report, MESSAGES.claimNotReplicated(0, 1, REPLICA_WAIT_MS), id, 10);
    await expectWrittenByNextFlush(counter, id, 14);
  });
});
