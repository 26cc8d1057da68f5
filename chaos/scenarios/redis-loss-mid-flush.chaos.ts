// Chaos scenario 13 (issue 47, item 1): Redis loses its data while a flush is in flight. An instance is
// stopped at a step of the flush protocol (its batch claimed; its UPDATE run but not committed; committed but
// not acknowledged), Redis loses everything (FLUSHALL, or a SIGKILL and an empty restart, chosen by the
// seed) while replies keep being inserted and counted and the other instance reads every row (loading it
// from the database, which may not have the batch yet); then the stopped instance goes on. Once the loss is
// detected, repairOnDataLoss recounts: every reply_count must end equal to its source, in Redis and in the
// database (neither a batch committed after the loss counted twice, nor one rolled back kept).
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RESP2 } from '../../support/redis.js';
import { seededRandom } from '../../support/seeded-random.js';
import { Topic } from '../../test/fixtures/sourced-entities.js';
import type { FlushStep } from '../worker/worker-protocol.js';
import { CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { privateRedisFor } from '../harness/redis-process.js';
import {
  flushUntilClean,
  insertTopics,
  liveReplyCounts,
  replyFigures,
  replySources,
  startReplyWriters,
} from '../harness/reply-writers.js';
import { sleep, within } from '../harness/time.js';

const TOPICS = 30;
const WRITERS = 4;
/** The steps at which a batch is in flight: claimed, written but not committed, committed but not acknowledged. */
const STEPS: FlushStep[] = ['after-claim', 'in-transaction', 'after-commit'];
/** How long the instance stays stopped at its step, the loss and the other instance's reads happening meanwhile. */
const STOPPED_MS = 600;
/** A flush reaches its step within this under the scenario's load (a batch is claimed at its first shard). */
const REACH_BOUND_MS = 10_000;
/** The repair starts once the flushes in flight at the loss have ended, and recounts 30 rows: well within this. */
const REPAIR_BOUND_MS = 30_000;

describe.each(CHAOS_DATABASES)('scenario 13: Redis data lost while a flush is in flight, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it.each(STEPS)('every count with a source ends equal to it, lost at %s', async (step) => {
    const run = await scenario.deploy('s13', {
      redisCommandTimeoutMs: 300,
      databaseTimeoutMs: 3_000,
      repairOnDataLoss: true,
    });
    const { observer } = run.deployment;
    const { server } = await privateRedisFor(run.deployment, []);
    const loss = seededRandom(run.seed)() < 0.5 ? 'FLUSHALL' : 'SIGKILL and an empty restart';
    const ids = await insertTopics(observer, TOPICS);
    const [a, b] = await run.deployment.startWorkers(['a', 'b'], { counter: { redis: server.url } });
    const writers = startReplyWriters(observer, ids, [a, b], WRITERS);
    const { tally } = writers;
    await sleep(500);
    expect((await a.flush()).error).toBeUndefined();
    await sleep(300);

    // a stops with a batch in flight; Redis loses everything; b loads every row from the database.
    await a.pauseAt(step);
    const flushing = a.flush();
    const reached = await within(a.reached(step), REACH_BOUND_MS, `worker a reaching ${step}`);
    if (loss === 'FLUSHALL') {
      const client = new Redis(server.url, RESP2);
      await client.flushall();
      client.disconnect();
    } else {
      await server.restart();
    }
    const loadedWhileStopped = await liveReplyCounts(b, ids).catch(() => undefined);
    await sleep(STOPPED_MS);
    await a.resume();
    const stoppedFlush = await flushing;
    await sleep(300);
    await writers.stop();

    // Each instance's next flushes detect the loss; the repair runs in the background.
    for (const worker of [a, b]) await flushUntilClean(worker);
    const losses = await Promise.all([a, b].map(async (worker) => (await worker.status()).lastRedisDataLoss));
    expect(losses.some((detected) => detected !== null)).toBe(true);
    const truth = await replySources(observer, ids);
    await within(
      (async () => {
        while (JSON.stringify(await liveReplyCounts(a, ids).catch(() => undefined)) !== JSON.stringify(truth))
          await sleep(100);
      })(),
      REPAIR_BOUND_MS,
      'the repair bringing every reply_count to its source',
    );
    for (const worker of [a, b]) await flushUntilClean(worker);

    const topics = await observer.getRepository(Topic).find({ order: { id: 'ASC' } });
    expect(topics.map((topic) => topic.replyCount)).toEqual(truth);
    expect(await liveReplyCounts(a, ids)).toEqual(truth);
    expect(await liveReplyCounts(b, ids)).toEqual(truth);
    const views = topics.reduce((sum, topic) => sum + topic.viewCount, 0);
    expect(views).toBeLessThanOrEqual(tally.viewsAcknowledged);
    const counted = topics.reduce((sum, topic) => sum + topic.replyCount, 0);
    run.record(`13 Redis data lost at ${step}, repaired`, replyFigures(tally, counted), {
      loss,
      batchStopped: reached.batchId ?? 'unknown',
      stoppedFlushError: stoppedFlush.error?.name ?? 'none',
      rowsLoadedWhileStopped: loadedWhileStopped?.filter((value) => value !== undefined).length ?? 0,
      repliesCounted: tally.repliesCounted,
      viewsAcknowledged: tally.viewsAcknowledged,
      viewsInDatabase: views,
      failedChanges: tally.failed,
      injected: `worker stopped at ${step}, Redis data lost (${loss}), the other worker reading every row, then resumed; repairOnDataLoss`,
    });
  });
});
