import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlushHistory } from '../../lib/flush/flush.history.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { RedisCluster } from '../../support/redis-cluster.js';
import { uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';
import { Article } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { scheduledFlush } from '../support/scheduled-flush.js';

const FAILED_FLUSHES = 4;

/** The one line that says claims stopped being confirmed: the reason, no stack. */
const REPLICAS_BEHIND = {
  level: 'error',
  context: 'CounterFlush',
  message: expect.stringMatching(
    /^Redis stopped confirming claims in time: A claimed counter batch reached 0 of 1 replica\(s\) of its Redis node within \d+ ms; it stays in Redis and a later flush writes it\. Changes and reads go on; flushes retry with backoff, logged at debug level\.$/,
  ) as unknown as string,
  stack: undefined,
};

// A cluster replica that stops acknowledging (frozen, or a network partition) fails every flush that
// claims something, with CounterReplicationLagError, for as long as it lasts: logged once when it begins
// and once when it ends, like an outage of Redis (outage-logs.spec.ts), not as an ERROR with a stack each.
describe('replica lag logs', () => {
  let cluster: RedisCluster;
  let database: TestDatabase;
  let counter: CounterApp;
  const logger = new RecordingLogger();

  beforeAll(async () => {
    // A replica stopped for seconds stays listed (a failed one would leave CLUSTER SLOTS).
    cluster = await RedisCluster.start({ args: ['--repl-diskless-sync-delay', '0'], nodeTimeoutMs: 30_000 });
    const listedBy = Date.now() + 30_000;
    while (!(await cluster.replicaListed())) {
      if (Date.now() > listedBy) throw new Error('the replica was not listed within 30 s');
      await sleep(100);
    }
    database = await createTestDatabase(DATABASES[0]);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: uniquePrefix('replica-lag-logs'),
      counter: {
        redis: { clusterNodes: cluster.nodes },
        shards: 1,
        flushOnShutdown: false,
        flushMaxBackoffMs: 1,
        redisCommandTimeoutMs: 400,
      },
    });
    counter.app.useLogger(logger);
  });
  afterAll(async () => {
    if (cluster?.replica.pid) process.kill(cluster.replica.pid, 'SIGCONT');
    await counter?.close();
    await database?.drop();
    await cluster?.stop();
  });

  it('logs the replicas falling behind once, without a stack, and their return after the failed flushes', async () => {
    const [id] = await insertArticles(counter.dataSource, [10]);
    expect(await counter.counters.increment(Article, id, 'like_count', 3)).toBe(13);
    logger.lines.length = 0;

    process.kill(cluster.replica.pid, 'SIGSTOP');
    try {
      for (let flush = 0; flush < FAILED_FLUSHES; flush++) await scheduledFlush(counter);
    } finally {
      process.kill(cluster.replica.pid, 'SIGCONT');
    }
    expect(counter.app.get(FlushHistory).consecutiveFailedFlushes).toBe(FAILED_FLUSHES);
    expect(logger.shown()).toEqual([REPLICAS_BEHIND]);
    expect(await articleCounts(counter.dataSource, [id])).toEqual(new Map([[id, { likes: 10, views: 0 }]]));

    await scheduledFlush(counter);
    expect(logger.shown()).toEqual([
      REPLICAS_BEHIND,
      {
        level: 'log',
        context: 'CounterFlush',
        message: `Redis confirms claims again, after ${FAILED_FLUSHES} failed flushes.`,
      },
    ]);
    expect(await articleCounts(counter.dataSource, [id])).toEqual(new Map([[id, { likes: 13, views: 0 }]]));
  });
});
