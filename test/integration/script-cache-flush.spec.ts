import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Article } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { TOPOLOGIES, type Topology } from '../support/topologies.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { RedisCluster } from '../../support/redis-cluster.js';
import { RedisServer } from '../../support/redis-server.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';
import { seededRandom, testSeed } from '../../support/seeded-random.js';

const ROWS = 20;
const CALLERS = 12;
/** Long enough for thousands of calls by SHA to meet an empty cache, on every node. */
const LOAD_MS = 3_000;
const SCRIPT_FLUSH_EVERY_MS = 2;

// G1, G7: Redis empties its script cache (SCRIPT FLUSH, a restart, a failover to a replica that never
// ran the scripts) while calls by SHA are on their way: each is answered NOSCRIPT without running and
// must be sent again with its body, never fail to its caller. Under a steady load of increments, reads
// and flushes, SCRIPT FLUSH runs on every node again and again; every call succeeds, and the database
// ends with exactly the acknowledged changes. One such call re-sent by SHA can meet a second flush
// (ioredis sends it again once, by SHA where another call has just loaded the script on the connection).
describe.each(TOPOLOGIES)('calls while Redis keeps flushing its scripts, %s', (topology: Topology) => {
  const keyPrefix = uniquePrefix('script-flush');
  // Servers of the spec's own: emptying the shared ones' script caches would change what the specs
  // running beside this one see (their round trips, their commands).
  let server: RedisServer | undefined;
  let cluster: RedisCluster | undefined;
  let nodes: Redis[] = [];
  let database: TestDatabase;
  let app: CounterApp;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    if (topology === 'standalone') server = await RedisServer.start();
    else {
      cluster = await RedisCluster.start();
      // Its replica listed (after its first sync), so that claims wait for it from the start.
      for (const deadline = Date.now() + 20_000; !(await cluster.replicaListed()) && Date.now() < deadline;)
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const ports = server ? [server.port] : [cluster!.master.port, cluster!.replica.port];
    nodes = ports.map((port) => new Redis({ host: '127.0.0.1', port, ...RESP2 }));
    app = await startCounterApp({
      database: database.options,
      keyPrefix,
      counter: { redis: server ? server.url : { clusterNodes: cluster!.nodes }, shards: 16, flushOnShutdown: false },
    });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    for (const node of nodes) node.disconnect();
    await server?.stop();
    await cluster?.stop();
    await database?.drop();
  });

  it('every increment, read and flush succeeds, each change counted once', async () => {
    const ids = await insertArticles(app.dataSource, Array<number>(ROWS).fill(0));
    const random = seededRandom(testSeed());
    const acknowledged = new Map<number, number>();
    const failures: string[] = [];
    const fail = (error: unknown) => failures.push(String(error));
    let running = true;

    const callers = Array.from({ length: CALLERS }, async (_, caller) => {
      while (running) {
        const id = ids[Math.floor(random() * ids.length)];
        try {
          if (caller === 0) await app.counters.getMany(Article, ids);
          else if (caller === 1) {
            const { error } = await app.counters.flush();
            if (error) fail(error);
          } else {
            await app.counters.increment(Article, id, 'like_count', 1);
            acknowledged.set(id, (acknowledged.get(id) ?? 0) + 1);
          }
        } catch (error) {
          fail(error);
        }
      }
    });
    let rounds = 0;
    const flushes = (async () => {
      while (running) {
        await Promise.all(nodes.map((node) => node.call('SCRIPT', 'FLUSH', rounds % 2 ? 'SYNC' : 'ASYNC')));
        rounds++;
        await new Promise((resolve) => setTimeout(resolve, SCRIPT_FLUSH_EVERY_MS));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, LOAD_MS));
    running = false;
    await Promise.all([...callers, flushes]);

    expect(failures.slice(0, 3)).toEqual([]);
    expect(rounds).toBeGreaterThan(100);
    expect((await app.counters.flush()).error).toBeUndefined();
    const counts = await articleCounts(app.dataSource, ids);
    expect(new Map(ids.map((id) => [id, counts.get(id)?.likes]))).toEqual(
      new Map(ids.map((id) => [id, acknowledged.get(id) ?? 0])),
    );
  });
});
