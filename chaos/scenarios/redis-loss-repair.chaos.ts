// Chaos scenario 12 (issue 42, part 3): a Redis without persistence SIGKILLed under load, then
// restarted empty, with repairOnDataLoss. The app's counts are derived from rows it inserts: the parent
// inserts a reply (the source) and then has a worker count it, as an app does after its INSERT commits.
// Whatever Redis lost, and whatever increments failed while it was down, every count that declares a
// source ends equal to it once the repair ran (0 lost), in Redis and in the database; what the count
// without a source (view_count) lost is measured and reported. Its result line counts replies: the
// rows inserted ("acknowledged") against the reply counts the database ends with.
import { describe, expect, it } from 'vitest';
import { Reply, Topic } from '../../test/fixtures/sourced-entities.js';
import { CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import type { ChaosWorker } from '../harness/chaos-worker.js';
import { privateRedisFor } from '../harness/redis-process.js';
import { sleep, within } from '../harness/time.js';

const TOPICS = 30;
const WRITERS = 4;
const LOAD_BEFORE_KILL_MS = 1_000;
const LOAD_AFTER_RESTART_MS = 800;
/** The repair recounts 30 rows in a step or two: well within this, even on a loaded machine. */
const REPAIR_BOUND_MS = 15_000;

describe.each(CHAOS_DATABASES)('scenario 12: Redis data lost under load, then repaired, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it('every count with a source ends equal to it; what the others lost is reported', async () => {
    const run = await scenario.deploy('s12', { redisCommandTimeoutMs: 300, repairOnDataLoss: true });
    const { observer } = run.deployment;
    const { server } = await privateRedisFor(run.deployment, []);
    const ids = (
      await observer.getRepository(Topic).insert(Array.from({ length: TOPICS }, () => ({})))
    ).identifiers.map((row) => (row as { id: number }).id);
    const workers = await run.deployment.startWorkers(['a', 'b'], { counter: { redis: server.url } });

    // Each writer: insert a reply, then count it and a view through one of the instances.
    let writing = true;
    const tally = { replies: 0, repliesCounted: 0, viewsAcknowledged: 0, failed: 0 };
    const writer = async (seed: number) => {
      for (let i = seed; writing; i++) {
        const topicId = ids[(i * 7) % TOPICS];
        const worker = workers[i % workers.length];
        await observer.getRepository(Reply).insert({ topicId });
        tally.replies++;
        await worker.increment('Topic', topicId, 'reply_count', 1).then(
          () => tally.repliesCounted++,
          () => tally.failed++,
        );
        await worker.increment('Topic', topicId, 'view_count', 1).then(
          () => tally.viewsAcknowledged++,
          () => tally.failed++,
        );
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, seed) => writer(seed));
    await sleep(LOAD_BEFORE_KILL_MS / 2);
    expect((await workers[0].flush()).error).toBeUndefined();
    await sleep(LOAD_BEFORE_KILL_MS / 2);
    await server.restart(); // SIGKILL, then an empty redis-server on the same port
    await sleep(LOAD_AFTER_RESTART_MS);
    writing = false;
    await Promise.all(writers);

    // Each instance's next flush that reaches the new Redis detects the loss, and repairs in the background.
    for (const worker of workers) await flushUntilClean(worker);
    // Every shard marked at bootstrap is gone: an instance that detects it names every counted entity,
    // and one detecting it is enough for the repair.
    const losses = await Promise.all(workers.map(async (worker) => (await worker.status()).lastRedisDataLoss));
    const detected = losses.filter((loss) => loss !== null);
    expect(detected.length).toBeGreaterThan(0);
    for (const loss of detected) expect(loss.entities).toEqual(['Article', 'Badge', 'Remark', 'Topic']);
    const sources = async () => Promise.all(ids.map((topicId) => observer.getRepository(Reply).countBy({ topicId })));
    const truth = await sources();
    const live = async () => {
      const rows = await workers[0].request<Array<[number, Record<string, number>]>>({
        op: 'getMany',
        entity: 'Topic',
        ids,
        counters: ['reply_count'],
      });
      const byId = new Map(rows);
      return ids.map((id) => byId.get(id)?.reply_count);
    };
    await within(
      (async () => {
        while (JSON.stringify(await live()) !== JSON.stringify(truth)) await sleep(100);
      })(),
      REPAIR_BOUND_MS,
      'the repair bringing every reply_count to its source',
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
    run.record(
      '12 Redis data lost, repaired from the source',
      {
        acknowledged: tally.replies,
        inDatabase: counted,
        lost: Math.max(0, tally.replies - counted),
        duplicated: Math.max(0, counted - tally.replies),
        uncertain: 0,
        backwards: 0,
        samples: 0,
        wrong: [],
        backwardSteps: [],
      },
      {
        repliesCounted: tally.repliesCounted,
        viewsAcknowledged: tally.viewsAcknowledged,
        viewsInDatabase: views,
        viewCountLost: tally.viewsAcknowledged - views,
        failedChanges: tally.failed,
        injected: 'redis-server (no persistence) SIGKILLed under load and restarted empty; repairOnDataLoss',
      },
    );
  });
});

/** Flushes until a flush ends without an error (the instance's client back on the restarted Redis). */
async function flushUntilClean(worker: ChaosWorker): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const report = await worker.flush();
    if (!report.error) return;
    if (attempt === 50) throw new Error(`flushes kept failing: ${report.error.message}`);
    await sleep(100);
  }
}
