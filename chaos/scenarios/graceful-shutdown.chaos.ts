// Chaos scenario 9 (issue 3): SIGTERM to an instance with deltas pending in Redis.
//
// - Database up: the final flush (beforeApplicationShutdown, through app.enableShutdownHooks()) writes
//   everything before the Redis and database clients close; no other instance is needed.
// - Database refusing connections at that moment (a proxy that resets them): the final flush fails, the
//   instance still exits, the deltas stay in Redis, and the next instance flushes them.
// - Database unreachable, packets dropped (a blackholing proxy): the same, except that an instance whose
//   final flush waits on a dead connection may not exit by itself; like an orchestrator after its grace
//   period, the scenario then SIGKILLs it. Whether it exited is reported, not asserted: no guarantee
//   bounds the time of a shutdown.
import { describe, expect, it } from 'vitest';
import { MESSAGES } from '../../lib/counter.messages.js';
import type { ProxyMode } from '../../support/tcp-proxy.js';
import { ChaosDeployment, CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import type { ChaosWorker } from '../harness/chaos-worker.js';
import { insertArticleTargets, readTargets, type CounterTarget } from '../harness/counter-targets.js';
import { redisBacklog, total } from '../harness/final-flush.js';
import { checkInvariant } from '../harness/invariant.js';
import { sleep } from '../harness/time.js';

const ROWS = 60;
const LOAD_MS = 500;
/** What an orchestrator would wait after SIGTERM before it SIGKILLs. */
const GRACE_MS = 5_000;

/** The instance that is stopped: scheduled flush on, but its interval never comes during the test. */
/** databaseTimeoutMs well inside the grace period: a silent database must not hang the final flush. */
const STOPPING_INSTANCE = {
  flushEnabled: true,
  flushIntervalMs: 60_000,
  flushOnShutdown: true,
  flushLeaseMs: 1_000,
  databaseTimeoutMs: 1_500,
};

/** Increments through `worker` for `ms`; returns what was acknowledged. */
async function countFor(
  deployment: ChaosDeployment,
  ms: number,
  targets: CounterTarget[],
  worker: ChaosWorker,
  seed: number,
) {
  const load = deployment.startLoad({ targets, workers: [worker], seed });
  await sleep(ms);
  return load.stop();
}

/** SIGTERM, then SIGKILL if the process is still there after the grace period. */
async function terminate(worker: ChaosWorker): Promise<{ exitedWithinGrace: boolean; shutdownMs: number }> {
  const sent = Date.now();
  await worker.signal('SIGTERM');
  const exitedWithinGrace = await Promise.race([worker.exited.then(() => true), sleep(GRACE_MS).then(() => false)]);
  const shutdownMs = Date.now() - sent;
  if (!exitedWithinGrace) await worker.signal('SIGKILL');
  return { exitedWithinGrace, shutdownMs };
}

describe.each(CHAOS_DATABASES)('scenario 9: SIGTERM with pending deltas, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it('database up: the final flush writes everything before the clients close', async () => {
    const run = await scenario.deploy('s9-up');
    const { deployment, seed } = run;
    const { observer, redis, prefix } = deployment;
    const targets = await insertArticleTargets(observer, ROWS);
    const start = await readTargets(observer, targets);
    const instance = await deployment.startWorker({ name: 'stopping', counter: STOPPING_INSTANCE });
    const sampler = deployment.startSampler(targets);
    const tally = await countFor(deployment, LOAD_MS, targets, instance, seed);
    const pending = await redisBacklog(redis, prefix);

    const { exitedWithinGrace, shutdownMs } = await terminate(instance);
    const exit = await instance.exited;
    const left = await redisBacklog(redis, prefix);
    await sampler.stop();
    const figures = await checkInvariant({ dataSource: observer, targets, start, tally, sampler });
    const details = {
      seed,
      pendingAtSigterm: pending.dirtyIds,
      exitedWithinGrace,
      shutdownMs,
      exit: exit.signal ?? exit.code,
    };
    run.record('9 SIGTERM, database up', figures, details);

    expect(pending.dirtyIds, 'deltas pending in Redis at the SIGTERM').toBeGreaterThan(0);
    expect(exitedWithinGrace).toBe(true);
    expect(instance.output).not.toContain(MESSAGES.finalFlushFailed());
    // Nothing left for another instance: the one that stopped wrote it all before closing its clients.
    expect(left).toEqual({ dirtyIds: 0, batches: 0, leases: 0 });
    expect(figures.wrong).toEqual([]);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
    expect(figures.inDatabase).toBe(figures.acknowledged);
    expect(tally.calls.refused, [...tally.errors].join(', ')).toBe(0);
  });

  it.each<ProxyMode>(['reset', 'blackhole'])(
    'database down (%s) at the SIGTERM: the deltas stay in Redis and the next instance flushes them',
    async (outage) => {
      const run = await scenario.deploy(`s9-${outage}`);
      const { deployment, seed } = run;
      const { observer, redis, prefix } = deployment;
      const targets = await insertArticleTargets(observer, ROWS);
      const start = await readTargets(observer, targets);
      const { proxy, options } = await deployment.databaseProxy();
      const instance = await deployment.startWorker({
        name: 'stopping',
        database: options,
        counter: STOPPING_INSTANCE,
      });
      const sampler = deployment.startSampler(targets);
      const tally = await countFor(deployment, LOAD_MS, targets, instance, seed);
      const pending = await redisBacklog(redis, prefix);

      proxy.setMode(outage);
      const { exitedWithinGrace, shutdownMs } = await terminate(instance);
      const left = await redisBacklog(redis, prefix);
      const whileDown = await checkInvariant({ dataSource: observer, targets, start, tally });

      const successor = await deployment.startWorker({ name: 'successor' });
      const backlogSeen = await successor.status();
      const { final: reports, figures } = await run.settle({ flusher: successor, targets, start, tally, sampler });
      const details = {
        seed,
        pendingAtSigterm: pending.dirtyIds,
        exitedWithinGrace,
        shutdownMs,
        finalFlushFailureLogged: instance.output.includes(MESSAGES.finalFlushFailed()),
        leftDirtyIds: left.dirtyIds,
        leftBatches: left.batches,
        inDatabaseWhileDown: whileDown.inDatabase,
        statusPendingRows: backlogSeen.pendingRows,
        successorBatches: total(reports, 'batches'),
        successorRecovered: total(reports, 'recoveredBatches'),
      };
      run.record(`9 SIGTERM, database down (${outage})`, figures, details);

      expect(pending.dirtyIds, 'deltas pending in Redis at the SIGTERM').toBeGreaterThan(0);
      // Nothing reached the database, and every delta is still in Redis: dirty, or claimed in a batch.
      expect(whileDown.inDatabase).toBe(0);
      expect(left.dirtyIds + left.batches).toBeGreaterThan(0);
      expect(backlogSeen.pendingRows, "the next instance's status() shows the backlog").toBeGreaterThan(0);
      // A refused connection fails the final flush at once; a silent one after databaseTimeoutMs.
      expect(exitedWithinGrace, `the instance exits within ${GRACE_MS} ms`).toBe(true);
      expect(details.finalFlushFailureLogged).toBe(true);
      expect(details.successorRecovered).toBeGreaterThanOrEqual(left.batches);
      expect(reports.filter((report) => report.error).map((report) => report.error!.message)).toEqual([]);
      expect(figures.wrong).toEqual([]);
      expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
      expect(figures.inDatabase).toBe(figures.acknowledged);
      expect(tally.calls.refused, [...tally.errors].join(', ')).toBe(0);
    },
  );
});
