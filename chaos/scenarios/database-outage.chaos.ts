// Chaos scenario 3 (issue 3): the database stopped, or its connections killed, in the middle of the
// flushes. DESIGN.md G7: flushes fail and are retried with exponential backoff and jitter, increments
// and reads go on from Redis, the backlog shows in status(), and once the database is back nothing is
// lost and nothing counted twice.
//
// Two instances with the scheduled flush on (short interval, small backoff ceiling) take a steady load.
// - "stopped": a proxy in front of the database resets (a server that is down: connections refused)
//   or blackholes (a host that is unreachable) every open and new connection for OUTAGE_MS; then the
//   database comes back as a restarted one does, without the sessions it had.
// - "connections killed": an instance is stopped inside a batch's transaction (UPDATE run, COMMIT not
//   yet), its sessions are killed from the server side, and it is let go on: its COMMIT fails.
import { describe, expect, it } from 'vitest';
import { COUNTER_DEFAULTS } from '../../lib/counter.constants.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import type { ProxyMode } from '../../support/tcp-proxy.js';
import { CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { insertArticleTargets, readTargets, targetKey } from '../harness/counter-targets.js';
import { killWorkerConnections, taggedConnection } from '../harness/database-connections.js';
import { backoffCeiling, loggedRetries, recoveries, StatusWatcher } from '../harness/flush-backoff.js';
import { differences, readThrough } from '../harness/live-reads.js';
import { batchInLedger } from '../harness/protocol-state.js';
import { sleep, within } from '../harness/time.js';
import { TimedDeltas } from '../harness/timed-deltas.js';

const ROWS = 40;
const FLUSH_INTERVAL_MS = 100;
const MAX_BACKOFF_MS = 800;
/**
 * How long the module waits for one database operation: a blackholed database never answers, and each
 * attempt only fails once this has passed.
 */
const DATABASE_TIMEOUT_MS = 400;
/** Failed attempts each instance must show: the delay reaches its ceiling at the third and stays there. */
const FAILURES_WANTED = 5;
/**
 * The longest a failed attempt takes: its write waits DATABASE_TIMEOUT_MS, and before that it claims
 * its shards (rows over every shard: a few claim round trips, slow on a loaded 2-core machine).
 */
const ATTEMPT_MS = DATABASE_TIMEOUT_MS + 400;
/**
 * Long enough for FAILURES_WANTED failures at the slowest: the flush running when the outage begins,
 * then each attempt after the longest delay it can draw and one scheduler tick.
 */
const OUTAGE_MS =
  ATTEMPT_MS +
  Array.from({ length: FAILURES_WANTED }, (_, n) =>
    n === 0 ? ATTEMPT_MS : backoffCeiling(n, FLUSH_INTERVAL_MS, MAX_BACKOFF_MS) + FLUSH_INTERVAL_MS + ATTEMPT_MS,
  ).reduce((sum, ms) => sum + ms, 0);
/**
 * The next attempt comes within one ceiling and one tick of the database's return. Allowed for as well: an
 * attempt or two failing after the return (timing out while both instances' pools reconnect and their
 * backlogs go in, say), each costing an attempt and a ceiling; the rest is slack. With only 2 s of slack
 * after the first attempt, one instance of a fresh-clone CI run (2026-11-25) had not flushed 2.9 s after
 * the database's return, while the other had after 229 ms (in the 31 runs of this scenario timed since, on
 * the same machine, the slowest instance took 907 ms). Why was not seen: the failure's message now carries
 * the instance's status and the end of its log.
 */
const RECOVERY_BOUND_MS =
  MAX_BACKOFF_MS + FLUSH_INTERVAL_MS + 2 * (ATTEMPT_MS + MAX_BACKOFF_MS + FLUSH_INTERVAL_MS) + 2_000;
const KILL_ROUNDS = 3;

const SCHEDULED_FLUSH = {
  databaseTimeoutMs: DATABASE_TIMEOUT_MS,
  flushEnabled: true,
  flushIntervalMs: FLUSH_INTERVAL_MS,
  flushMaxBackoffMs: MAX_BACKOFF_MS,
  flushLeaseMs: 1_000,
};

/** What the backoff looked like on one worker: delays drawn (log) and gaps between failures (status). */
function backoffOf(log: string, watcher: StatusWatcher, until: number) {
  const retries = loggedRetries(log);
  const failures = watcher.failures(until);
  const gaps = retries.flatMap(({ attempt, delayMs }) => {
    const at = failures.get(attempt);
    const next = failures.get(attempt + 1);
    return at !== undefined && next !== undefined ? [{ attempt, delayMs, gapMs: next - at }] : [];
  });
  return { retries, gaps };
}

describe.each(CHAOS_DATABASES)('scenario 3: the database down during the flushes, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it.each<ProxyMode>(['reset', 'blackhole'])(
    'database stopped (%s): flushes back off, counting and reading go on, nothing is lost',
    async (outage) => {
      const run = await scenario.deploy(`s3-${outage}`, SCHEDULED_FLUSH);
      const { deployment, seed } = run;
      const { observer, prefix } = deployment;
      // Rows over every shard: each instance finds shards of its own to fail on while the other's
      // failing transaction holds its leases (rows in one shard would leave one of them with none).
      const targets = await insertArticleTargets(observer, ROWS, new CounterKeys(prefix, COUNTER_DEFAULTS.shards));
      const start = await readTargets(observer, targets);
      const { proxy, options } = await deployment.databaseProxy();
      // Debug too: an outage's failed flushes, with the delays they drew, are logged at that level.
      const workers = await deployment.startWorkers(['a', 'b'], {
        database: options,
        logLevels: ['error', 'warn', 'debug'],
      });
      const sampler = deployment.startSampler(targets);
      const tally = new TimedDeltas();
      const load = deployment.startLoad({ targets, workers, seed, tally });
      await sleep(500);
      // Every row is in Redis before the outage (a read loads it), so reads during it come from there.
      await readThrough(workers[0], targets);
      const watchers = workers.map((worker) => new StatusWatcher(worker).start());
      for (const watcher of watchers) deployment.onClose(() => watcher.stop());

      const ackedBeforeOutage = tally.calls.acknowledged;
      const downAt = Date.now();
      proxy.setMode(outage);
      await sleep(OUTAGE_MS / 2);

      // Mid-outage, with the load drained: each instance reads exactly start + acknowledged, from Redis,
      // while the database is behind.
      await load.useWorkers([]);
      const expectedLive = new Map(
        targets.map((target) => [targetKey(target), start.get(targetKey(target))! + tally.acknowledged(target)]),
      );
      const servedMidOutage = await Promise.all(workers.map((worker) => readThrough(worker, targets)));
      const inDatabaseMidOutage = [...(await readTargets(observer, targets))].reduce(
        (sum, [key, value]) => sum + value - start.get(key)!,
        0,
      );
      const acknowledgedMidOutage = tally.totalAcknowledged;
      await load.useWorkers(workers);
      await sleep(OUTAGE_MS / 2);

      const ackedDuringOutage = tally.calls.acknowledged - ackedBeforeOutage;
      // The log up to the database's return: the failures of the outage, not of what comes after.
      const logOfOutage = workers.map((worker) => worker.output);
      const upAt = Date.now();
      // The database is back, as a restarted server is: the sessions it had are gone (their connections
      // are reset, which also ends any transaction the blackhole caught half way), new ones pass.
      proxy.setMode('reset');
      proxy.setMode('pass');
      const recoveryMs = await recoveries(workers, upAt, RECOVERY_BOUND_MS);
      // A worker that did not flush again: what it was doing instead, for the failure's message.
      const stuck = await Promise.all(
        workers.map(async (worker, i) =>
          recoveryMs[i] === null
            ? `; its status then: ${JSON.stringify(await worker.status())}; its log's end:\n${worker.output.slice(-3_000)}`
            : '',
        ),
      );
      await Promise.all(watchers.map((watcher) => watcher.stop()));

      await load.stop();
      const { figures } = await run.settle({ flusher: workers[0], targets, start, tally, sampler });
      const backoff = workers.map((_, i) => backoffOf(logOfOutage[i], watchers[i], upAt));
      // One second in, a flush that was running when the outage began has failed or is stuck.
      const during = watchers.map((watcher) => watcher.samples.filter(({ at }) => at > downAt + 1_000 && at < upAt));
      const details = {
        seed,
        outageMs: upAt - downAt,
        acknowledgedDuringOutage: ackedDuringOutage,
        failedAttempts: backoff.map(({ retries }) => retries.length).join('/'),
        delaysMs: backoff[0].retries.map(({ delayMs }) => delayMs).join(','),
        gapsMs: backoff[0].gaps.map(({ gapMs }) => gapMs).join(','),
        pendingRowsMidOutage: during[0].at(-1)?.status.pendingRows ?? null,
        oldestPendingAgeMs: during[0].at(-1)?.status.oldestPendingAgeMs ?? null,
        inDatabaseMidOutage,
        acknowledgedMidOutage,
        recoveryMs: recoveryMs.map((ms) => ms ?? 'none').join('/'),
      };
      run.record(`3 database stopped (${outage})`, figures, {
        ...details,
        injected: `database proxy '${outage}' for ${OUTAGE_MS} ms under load, 2 instances`,
      });

      // Counting and reading went on from Redis.
      expect(tally.calls.refused + tally.calls.uncertain, tally.describeFailures(downAt)).toBe(0);
      expect(ackedDuringOutage).toBeGreaterThan(0);
      for (const served of servedMidOutage) expect(differences(served, expectedLive)).toEqual([]);
      expect(inDatabaseMidOutage).toBeLessThan(acknowledgedMidOutage);

      for (const [i, worker] of workers.entries()) {
        // The backlog was visible: rows pending, the oldest change ageing with the clock, no success.
        const seen = during[i];
        expect(seen.length).toBeGreaterThanOrEqual(2);
        for (const { status } of seen) expect(status.pendingRows).toBeGreaterThan(0);
        expect(new Set(seen.map(({ status }) => status.lastSuccessfulFlushAt?.getTime())).size).toBe(1);
        const [first, last] = [seen[0], seen.at(-1)!];
        expect(last.status.oldestPendingAgeMs! - first.status.oldestPendingAgeMs!).toBeGreaterThanOrEqual(
          last.at - first.at - 100,
        );

        // Soft from here: a library that fails one of these is reported on all of them.
        // Each failure drew its delay in [c/2, c], c = min(max, interval · 2^n): exponential, capped, jittered.
        const { retries, gaps } = backoff[i];
        expect
          .soft(retries.length, `${worker.name}: failed flush attempts during the outage`)
          .toBeGreaterThanOrEqual(FAILURES_WANTED);
        expect.soft(retries.map(({ attempt }) => attempt)).toEqual(retries.map((_, n) => n + 1));
        for (const { attempt, delayMs } of retries) {
          const ceiling = backoffCeiling(attempt, FLUSH_INTERVAL_MS, MAX_BACKOFF_MS);
          expect.soft(delayMs, `attempt ${attempt}`).toBeGreaterThanOrEqual(ceiling / 2);
          expect.soft(delayMs, `attempt ${attempt}`).toBeLessThanOrEqual(ceiling);
        }
        const atCeiling = retries.filter(
          ({ attempt }) => backoffCeiling(attempt, FLUSH_INTERVAL_MS, MAX_BACKOFF_MS) === MAX_BACKOFF_MS,
        );
        expect
          .soft(new Set(atCeiling.map(({ delayMs }) => delayMs)).size, 'jitter: delays at the ceiling differ')
          .toBeGreaterThan(1);
        // status() saw the attempts no sooner than the delays allowed, so the gaps grew with them.
        expect.soft(gaps.length, `${worker.name}: gaps seen through status()`).toBeGreaterThanOrEqual(3);
        for (const { attempt, delayMs, gapMs } of gaps)
          expect.soft(gapMs, `gap after attempt ${attempt}`).toBeGreaterThanOrEqual(delayMs);
        expect
          .soft(recoveryMs[i], `${worker.name}: flushing again by itself once the database was back${stuck[i]}`)
          .not.toBeNull();
      }

      expect(figures.wrong).toEqual([]);
      expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
      expect(figures.inDatabase).toBe(figures.acknowledged);
    },
  );

  it('connections killed mid-flush: the batch fails, is retried and applied once', async () => {
    const run = await scenario.deploy('s3-kill', SCHEDULED_FLUSH);
    const { deployment, seed } = run;
    const { observer, prefix } = deployment;
    const targets = await insertArticleTargets(observer, ROWS);
    const start = await readTargets(observer, targets);
    const tag = prefix;
    const workers = await deployment.startWorkers(['a', 'b'], {
      database: taggedConnection(deployment.database.options, tag),
    });
    const sampler = deployment.startSampler(targets);
    const tally = new TimedDeltas();
    const load = deployment.startLoad({ targets, workers, seed, tally });
    const loadStartedAt = Date.now();
    await sleep(400);
    // Every row in Redis first (a read loads it): the kills must not catch an increment loading its row.
    await readThrough(workers[0], targets);

    const rounds: Array<{
      victim: string;
      batchId: string;
      killed: number;
      committedAtKill: boolean;
      error: string | null;
    }> = [];
    for (let round = 0; round < KILL_ROUNDS; round++) {
      const victim = workers[round % workers.length];
      const failedBefore = (await victim.status()).lastFailedFlushAt?.getTime() ?? 0;
      await victim.pauseAt('in-transaction');
      // The victim's next scheduled flush stops with its UPDATE run and its COMMIT not sent.
      const reached = await within(victim.reached('in-transaction'), 10_000, `${victim.name} reaching in-transaction`);
      const killed = await killWorkerConnections(observer, tag);
      // Killed before its COMMIT: the server rolled the transaction back.
      const committedAtKill = await batchInLedger(observer, reached.batchId!);
      await victim.resume();
      const failed = await within(
        (async () => {
          for (;;) {
            const status = await victim.status();
            if ((status.lastFailedFlushAt?.getTime() ?? 0) > failedBefore) return status;
            await sleep(25);
          }
        })(),
        10_000,
        `${victim.name}'s flush failing after its connection was killed`,
      );
      rounds.push({
        victim: victim.name,
        batchId: reached.batchId!,
        killed,
        committedAtKill,
        error: failed.lastFlushError,
      });
      await sleep(300);
    }

    await load.stop();
    const { figures } = await run.settle({ flusher: workers[0], targets, start, tally, sampler });
    const inLedger = await Promise.all(rounds.map(({ batchId }) => batchInLedger(observer, batchId)));
    const details = {
      seed,
      rounds: KILL_ROUNDS,
      sessionsKilled: rounds.map(({ killed }) => killed).join('/'),
      killedBatchesInLedger: inLedger.filter(Boolean).length,
      firstError: rounds[0].error ?? '',
    };
    run.record('3 connections killed mid-flush', figures, {
      ...details,
      injected: `${KILL_ROUNDS}× an instance stopped between its batch's UPDATE and COMMIT, its database sessions killed (${databaseName === 'postgres' ? 'pg_terminate_backend' : 'KILL CONNECTION'}), then let go on`,
    });

    for (const { killed, committedAtKill, error } of rounds) {
      expect(killed).toBeGreaterThanOrEqual(1);
      expect(committedAtKill).toBe(false);
      expect(error, 'the flush whose COMMIT lost its connection failed').not.toBeNull();
    }
    // Each batch whose transaction was killed was written later, once (the ledger's key).
    expect(inLedger).toEqual(rounds.map(() => true));
    expect(tally.calls.refused + tally.calls.uncertain, tally.describeFailures(loadStartedAt)).toBe(0);
    expect(figures.wrong).toEqual([]);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
    expect(figures.inDatabase).toBe(figures.acknowledged);
  });
});
