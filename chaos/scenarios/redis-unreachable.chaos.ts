// Chaos scenario 4 (issue 3): Redis unreachable. DESIGN.md G7: increments fail fast with
// CounterStoreUnavailableError, within a bound set by `redisCommandTimeoutMs`; reads fall back to the
// database; nothing hangs; and the instances recover by themselves once Redis is back.
//
// Two instances (scheduled flush on) take a steady load while Redis is
// - "stopped": a redis-server of the scenario's own, stopped with SIGTERM and started again later. It
//   runs with `appendfsync always`, so the stop is an outage and not a loss of data (scenario 5);
// - "blackhole": the shared Redis behind a proxy that holds every connection and answers nothing, so
//   commands already sent time out and their outcome is unknown.
// An increment that failed is not acknowledged; one that timed out after it was sent is "uncertain" and
// is allowed, as such, in the invariant. Every other delta must be in the database exactly.
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { REDIS_URL } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { ChaosDeployment, CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { insertArticleTargets, readTargets, targetKey } from '../harness/counter-targets.js';
import { recoveries } from '../harness/flush-backoff.js';
import { differences, getThrough, readThrough } from '../harness/live-reads.js';
import { countingAgain } from '../harness/recovery.js';
import { privateRedisFor } from '../harness/redis-process.js';
import { sleep, within } from '../harness/time.js';
import { TimedDeltas, worst } from '../harness/timed-deltas.js';

const ROWS = 40;
const REDIS_TIMEOUT_MS = 300;
/**
 * Beyond the one command that times out: what an increment may have done before it (load its row from
 * the database), and the IPC round trip to the worker through two event loops on a busy 2-core machine.
 */
const MARGIN_MS = 500;
const FAIL_FAST_BOUND_MS = REDIS_TIMEOUT_MS + MARGIN_MS;
const OUTAGE_MS = 2_500;
/** ioredis waits at most 2 s between reconnection attempts; the rest is slack. */
const RECOVERY_BOUND_MS = 8_000;
const FLUSH_INTERVAL_MS = 200;
const MAX_BACKOFF_MS = 1_000;
/** Reconnected, the scheduled flush waits out its backoff (one ceiling) and one tick. */
const FLUSHED_AGAIN_BOUND_MS = RECOVERY_BOUND_MS + MAX_BACKOFF_MS + FLUSH_INTERVAL_MS;

type RedisOutage = 'stopped' | 'blackhole';

interface OutageControl {
  /** What the workers connect to. */
  url: string;
  /** The parent's client of the same Redis, directly (not through the fault). */
  inspector: Redis;
  begin(): Promise<unknown>;
  end(): Promise<unknown>;
  injected: string;
}

async function outageFor(kind: RedisOutage, deployment: ChaosDeployment): Promise<OutageControl> {
  if (kind === 'stopped') {
    const { server, inspector } = await privateRedisFor(deployment, ['--appendonly', 'yes', '--appendfsync', 'always']);
    return {
      url: server.url,
      inspector,
      begin: () => server.kill('SIGTERM'),
      end: () => server.restart(),
      injected: `redis-server stopped (SIGTERM; appendfsync always) for ${OUTAGE_MS} ms, then started again`,
    };
  }
  const shared = new URL(REDIS_URL);
  const proxy = await TcpProxy.start({ host: shared.hostname, port: Number(shared.port || 6379) });
  deployment.onClose(() => proxy.close());
  return {
    url: proxy.url,
    inspector: deployment.redis,
    begin: async () => proxy.setMode('blackhole'),
    end: async () => proxy.setMode('pass'),
    injected: `proxy in front of Redis blackholing every connection for ${OUTAGE_MS} ms`,
  };
}

async function timed<T>(read: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await read();
  return { value, ms: performance.now() - started };
}

describe.each(CHAOS_DATABASES)('scenario 4: Redis unreachable, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it.each<RedisOutage>(['stopped', 'blackhole'])(
    'Redis %s: increments fail fast, reads fall back to the database, the instances recover by themselves',
    async (kind) => {
      const run = await scenario.deploy(`s4-${kind}`, {
        redisCommandTimeoutMs: REDIS_TIMEOUT_MS,
        flushEnabled: true,
        flushIntervalMs: FLUSH_INTERVAL_MS,
        flushMaxBackoffMs: MAX_BACKOFF_MS,
      });
      const { deployment, seed } = run;
      const { observer } = deployment;
      const outage = await outageFor(kind, deployment);
      const targets = await insertArticleTargets(observer, ROWS);
      const start = await readTargets(observer, targets);
      const workers = await deployment.startWorkers(['a', 'b'], { counter: { redis: outage.url } });
      const sampler = deployment.startSampler(targets);
      const tally = new TimedDeltas();
      const load = deployment.startLoad({ targets, workers, seed, tally });
      await sleep(500);

      await outage.begin();
      const downAt = Date.now();
      await sleep(OUTAGE_MS / 2);

      // Mid-outage: status() still answers; reads are the database's values (frozen: nothing can be
      // claimed from Redis), through getMany and get, each within the bound.
      const statuses = await within(
        Promise.all(workers.map((worker) => worker.status())),
        FAIL_FAST_BOUND_MS * 4,
        'status() during the outage',
      );
      const databaseBefore = await readTargets(observer, targets);
      const many = await Promise.all(workers.map((worker) => timed(() => readThrough(worker, targets))));
      const one = await Promise.all(workers.map((worker) => timed(() => getThrough(worker, targets[0]))));
      const databaseAfter = await readTargets(observer, targets);
      await sleep(OUTAGE_MS / 2);

      await outage.end();
      const upAt = Date.now();
      const [recoveryMs, flushedAgainMs] = await Promise.all([
        Promise.all(workers.map((worker, i) => countingAgain(tally, worker, targets[i], upAt, RECOVERY_BOUND_MS))),
        recoveries(workers, upAt, FLUSHED_AGAIN_BOUND_MS),
      ]);
      await sleep(500);
      await within(load.stop(), 10_000, 'every increment answering');
      // The scheduled flushes since the return are where a loss of data would be noticed (none happened).
      // Read before the final flush: a flush() running beside the scheduled one in the same instance
      // currently reports a loss of Redis data that did not happen, which is not this scenario's subject.
      const afterwards = await Promise.all(workers.map((worker) => worker.status()));
      const { figures } = await run.settle({
        flusher: workers[0],
        targets,
        start,
        tally,
        sampler,
        redis: outage.inspector,
      });

      const failed = tally.select(({ outcome }) => outcome !== 'acknowledged');
      const slowestFailure = failed.reduce(
        (slowest, increment) => (increment.latencyMs > slowest.latencyMs ? increment : slowest),
        failed[0],
      );
      const duringOutage = tally.select(({ sentAt }) => sentAt >= downAt && sentAt < upAt);
      const details = {
        seed,
        redisCommandTimeoutMs: REDIS_TIMEOUT_MS,
        failedIncrements: failed.length,
        refusedIncrements: tally.calls.refused,
        uncertainIncrements: tally.calls.uncertain,
        uncertainApplied: figures.inDatabase - figures.acknowledged,
        worstFailedIncrementMs: Math.round(worst(failed.map(({ latencyMs }) => latencyMs))),
        // When the slowest failure was sent, relative to the start of the outage.
        worstFailedSentAtMs: slowestFailure ? slowestFailure.sentAt - downAt : null,
        worstIncrementDuringOutageMs: Math.round(worst(duringOutage.map(({ latencyMs }) => latencyMs))),
        worstReadMs: Math.round(worst([...many, ...one].map(({ ms }) => ms))),
        acknowledgedAfterReturn: tally.select(({ outcome, sentAt }) => outcome === 'acknowledged' && sentAt >= upAt)
          .length,
        recoveryMs: recoveryMs.map((ms) => ms ?? 'none').join('/'),
        flushedAgainMs: flushedAgainMs.map((ms) => ms ?? 'none').join('/'),
        errors: [...tally.errors].map(([name, count]) => `${name}×${count}`).join(','),
      };
      run.record(`4 Redis ${kind}`, figures, { ...details, injected: outage.injected });

      // Failed fast, with the typed error, within the bound; a change sent and timed out is only "uncertain".
      expect(failed.length, 'increments failed during the outage').toBeGreaterThan(0);
      expect([...tally.errors.keys()], tally.describeFailures(downAt)).toEqual(['CounterStoreUnavailableError']);
      expect(details.worstFailedIncrementMs).toBeLessThanOrEqual(FAIL_FAST_BOUND_MS);
      if (kind === 'blackhole')
        expect(tally.calls.uncertain, 'commands sent into the blackhole timed out').toBeGreaterThan(0);

      // Reads fell back to the database, within the bound; status() said Redis was away.
      for (const { value } of many) expect(differences(value, databaseBefore)).toEqual([]);
      for (const { value } of one) expect(value).toBe(databaseBefore.get(targetKey(targets[0])));
      expect(differences(databaseBefore, databaseAfter)).toEqual([]);
      expect(details.worstReadMs).toBeLessThanOrEqual(FAIL_FAST_BOUND_MS);
      for (const status of statuses)
        expect(status).toMatchObject({ redisAvailable: false, pendingRows: null, oldestPendingAgeMs: null });

      // Back by themselves, no restart; and Redis came back with its data, which nobody took for a loss.
      expect(recoveryMs, 'ms until each instance counted again').not.toContain(null);
      expect(details.acknowledgedAfterReturn).toBeGreaterThan(0);
      expect(flushedAgainMs, 'ms until each scheduled flush succeeded again').not.toContain(null);
      for (const status of afterwards) expect(status.lastRedisDataLoss).toBeNull();

      expect(figures.wrong).toEqual([]);
      expect(figures).toMatchObject({ lost: 0, duplicated: 0, backwards: 0 });
      expect(figures.inDatabase).toBeGreaterThanOrEqual(figures.acknowledged);
      expect(figures.inDatabase).toBeLessThanOrEqual(figures.acknowledged + figures.uncertain);
    },
  );
});
