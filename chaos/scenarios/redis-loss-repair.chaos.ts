// Chaos scenario 12 (issue 42, part 3; issue 47, item 13): a Redis without persistence SIGKILLed under
// load, then restarted empty, with repairOnDataLoss; then, while the repair is queued and starts its
// walk, a second short disconnect of every instance from Redis (a proxy resetting connections), the load
// still running. The app's counts are derived from rows it inserts: the parent inserts a reply (the
// source) and then has a worker count it, as an app does after its INSERT commits. Whatever Redis lost,
// and whatever increments were refused while it was down or unreachable, every count that declares a
// source ends equal to it once the repair ran (0 lost), in Redis and in the database; what the count
// without a source (view_count) lost is measured and reported. Its result line counts replies: the
// rows inserted ("acknowledged") against the reply counts the database ends with.
import { describe, expect, it } from 'vitest';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { Topic } from '../../test/fixtures/sourced-entities.js';
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
const LOAD_BEFORE_KILL_MS = 1_000;
const LOAD_AFTER_RESTART_MS = 800;
/** The second disconnect, from just before the repair's walk is due: the walk meets it. */
const SECOND_OUTAGE_MS = 1_500;
/**
 * The repair recounts 30 rows in a step or two, after retries whose backoff reaches 3.2 s by the end of
 * the second outage: well within this, even on a loaded machine.
 */
const REPAIR_BOUND_MS = 15_000;
/** The workers' databaseTimeoutMs: short, so that the repair's walk starts soon after the loss. */
const DATABASE_TIMEOUT_MS = 3_000;
/** A walk starts flushLeaseMs (1 s: the default with the default interval) + databaseTimeoutMs after the loss. */
const WALK_DELAY_MS = 1_000 + DATABASE_TIMEOUT_MS;

describe.each(CHAOS_DATABASES)('scenario 12: Redis data lost under load, then repaired, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it('every count with a source ends equal to it; what the others lost is reported', async () => {
    const run = await scenario.deploy('s12', {
      redisCommandTimeoutMs: 300,
      databaseTimeoutMs: DATABASE_TIMEOUT_MS,
      repairOnDataLoss: true,
    });
    const { observer } = run.deployment;
    const { server, inspector } = await privateRedisFor(run.deployment, []);
    // Every instance reaches Redis through one proxy, for the second disconnect.
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: server.port });
    run.deployment.onClose(() => proxy.close());
    const ids = await insertTopics(observer, TOPICS);
    const workers = await run.deployment.startWorkers(['a', 'b'], { counter: { redis: proxy.url } });

    // Each writer: insert a reply, then count it and a view through one of the instances.
    const writers = startReplyWriters(observer, ids, workers, WRITERS);
    const { tally } = writers;
    await sleep(LOAD_BEFORE_KILL_MS / 2);
    expect((await workers[0].flush()).error).toBeUndefined();
    await sleep(LOAD_BEFORE_KILL_MS / 2);
    await server.restart(); // SIGKILL, then an empty redis-server on the same port
    await sleep(LOAD_AFTER_RESTART_MS);

    // The first flush that reaches the new Redis detects the loss and queues the repair, whose walk waits
    // WALK_DELAY_MS to start. The second disconnect starts just before, the load still running.
    await flushUntilClean(workers[0]);
    const repairJobs = `${run.deployment.prefix}:{repair}:jobs`;
    await within(
      (async () => {
        while ((await inspector.hlen(repairJobs)) !== 1) await sleep(20);
      })(),
      1_000,
      'the repair being queued',
    );
    await sleep(WALK_DELAY_MS - 300);
    proxy.setMode('reset');
    await sleep(SECOND_OUTAGE_MS);
    proxy.setMode('pass');
    // Both instances flush again once they reach Redis; either may walk the repair, once.
    for (const worker of workers) await flushUntilClean(worker);
    await writers.stop();
    // Every shard marked at bootstrap is gone: an instance that detects it names every counted entity,
    // and one detecting it is enough for the repair.
    const losses = await Promise.all(workers.map(async (worker) => (await worker.status()).lastRedisDataLoss));
    const detected = losses.filter((loss) => loss !== null);
    expect(detected.length).toBeGreaterThan(0);
    for (const loss of detected) expect(loss.entities).toEqual(['Article', 'Badge', 'Remark', 'Topic']);
    const sources = () => replySources(observer, ids);
    const truth = await sources();
    const live = () => liveReplyCounts(workers[0], ids);
    await within(
      (async () => {
        while (JSON.stringify(await live()) !== JSON.stringify(truth)) await sleep(100);
      })(),
      REPAIR_BOUND_MS,
      'the repair bringing every reply_count to its source',
    );
    // Nothing left to repair: the walk finished, and the refused rows were recounted.
    await within(
      (async () => {
        while ((await inspector.exists(repairJobs)) === 1) await sleep(100);
      })(),
      REPAIR_BOUND_MS,
      'the repair job leaving Redis',
    );
    await flushUntilClean(workers[0]);

    const topics = await observer.getRepository(Topic).find({ order: { id: 'ASC' } });
    expect(topics.map((topic) => topic.replyCount)).toEqual(truth);
    expect(await live()).toEqual(truth);
    expect(await sources()).toEqual(truth);
    const views = topics.reduce((sum, topic) => sum + topic.viewCount, 0);
    expect(views).toBeLessThanOrEqual(tally.viewsAcknowledged);
    // The invariant here is the source: the replies inserted are what reply_count must hold.
    const counted = topics.reduce((sum, topic) => sum + topic.replyCount, 0);
    run.record('12 Redis data lost, repaired from the source', replyFigures(tally, counted), {
      repliesCounted: tally.repliesCounted,
      viewsAcknowledged: tally.viewsAcknowledged,
      viewsInDatabase: views,
      viewCountLost: tally.viewsAcknowledged - views,
      failedChanges: tally.failed,
      injected:
        'redis-server (no persistence) SIGKILLed under load and restarted empty, then every instance ' +
        `disconnected from it for ${SECOND_OUTAGE_MS} ms as the repair starts; repairOnDataLoss`,
    });
  });
});
