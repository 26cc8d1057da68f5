import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import type { RedisServer } from '../../support/redis-server.js';
import { uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';
import { startEverysecServer, WAITAOF_SERVER, waitAofServerMissing } from '../../support/waitaof-server.js';
import { Article } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';

/** A lease much shorter than the claim's wait for the next fsync (most of a second under everysec). */
const LEASE_MS = 300;

/** When the second instance flushes after the first started: past LEASE_MS, well before the next fsync. */
const SECOND_FLUSH_AFTER_MS = 600;

const missing = waitAofServerMissing();

// A claim that holds a batch waits for its fsync before the batch is written, and its lease is renewed
// only once the claim resolved (LeaseKeeper renews the leases a flush holds). So the claim takes its
// lease for flushLeaseMs plus the longest wait (ScriptRunner.waitAfterClaimMs): otherwise another
// instance would take the shard over while the first still waits, and both would write the batch.
describe.skipIf(missing !== undefined)(`a claim's lease outlasts its wait for the AOF on ${WAITAOF_SERVER}`, () => {
  let server: RedisServer;
  let control: Redis;
  let exact: boolean;
  let database: TestDatabase;
  const apps: CounterApp[] = [];

  beforeAll(async () => {
    ({ server, control, exact } = await startEverysecServer(6450));
    database = await createTestDatabase(DATABASES[0]);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    control?.disconnect();
    await database?.drop();
    await server?.stop();
  });

  it('keeps the shard from a second instance while the claim waits for the fsync', async (context) => {
    if (!exact) return context.skip(`${WAITAOF_SERVER}'s WAITAOF answers before the fsync: no wait to outlast`);
    const keyPrefix = uniquePrefix('aof-lease');
    const counter = { redis: server.url, shards: 1, flushLeaseMs: LEASE_MS, flushOnShutdown: false };
    const first = await startCounterApp({ database: database.options, keyPrefix, counter });
    apps.push(first);
    const second = await startCounterApp({ database: database.options, keyPrefix, counter, synchronize: false });
    apps.push(second);
    const [id] = await insertArticles(first.dataSource, [10]);
    expect(await first.counters.increment(Article, id, 'like_count', 4)).toBe(14);

    // Just after an fsync: the first claim waits most of a second for the next one.
    await control.set('aof-lease:sync', '1');
    expect(await control.call('waitaof', 1, 0, 5_000)).toEqual([1, 0]);
    let firstEnded = false;
    const firstFlush = first.counters.flush().finally(() => (firstEnded = true));
    await sleep(SECOND_FLUSH_AFTER_MS);
    const secondReport = await second.counters.flush();
    // The second flush met the first's claim while it still waited for the fsync.
    expect(firstEnded).toBe(false);
    const firstReport = await firstFlush;

    expect(secondReport).toMatchObject({ batches: 0, recoveredBatches: 0, busyShards: 1, lostLeases: 0 });
    expect(secondReport.error).toBeUndefined();
    expect(firstReport).toMatchObject({ batches: 1, rows: 1, recoveredBatches: 0, busyShards: 0, lostLeases: 0 });
    expect(firstReport.failedShards).toBe(0);
    expect(firstReport.error).toBeUndefined();
    expect(await articleCounts(first.dataSource, [id])).toEqual(new Map([[id, { likes: 14, views: 0 }]]));
  });
});
