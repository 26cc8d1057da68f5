// Chaos scenario 7 (issue 3): five instances fire the flush at the same moment, round after round,
// while increments keep arriving through all of them. Every batch is applied once (ledger rows ==
// batches reported), and the shards are flushed in parallel by several instances, not one at a time.
//
// Each round every instance is told one start time a little ahead (`flush(at)`), so that the five
// flushes start within a timer's precision of each other rather than an IPC round trip apart.
import { describe, expect, it } from 'vitest';
import type { WireFlushReport } from '../worker/worker-protocol.js';
import { CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { insertArticleTargets, insertRemarkTargets, readTargets } from '../harness/counter-targets.js';
import { total } from '../harness/final-flush.js';
import { sleep } from '../harness/time.js';

const INSTANCES = 5;
const ROUNDS = 100;
const SHARDS = 16;
/** How far ahead of now each round's common start time is set. */
const FIRE_AHEAD_MS = 25;

describe.each(CHAOS_DATABASES)('scenario 7: five instances flushing at the same moment, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it(`${ROUNDS} rounds: every batch applied once, shards flushed by several instances at once`, async () => {
    const run = await scenario.deploy('s7', { shards: SHARDS });
    const { deployment, seed } = run;
    const { observer, prefix } = deployment;
    const targets = [
      ...(await insertArticleTargets(observer, 150)),
      ...(await insertRemarkTargets(observer, 100, prefix)),
    ];
    const start = await readTargets(observer, targets);
    const ledgerBefore = await deployment.ledgerRows();
    const workers = await deployment.startWorkers(Array.from({ length: INSTANCES }, (_, i) => `flusher-${i + 1}`));
    const sampler = deployment.startSampler(targets);
    const load = deployment.startLoad({ targets, workers, seed, callers: 10, pauseMs: 1 });

    const rounds: WireFlushReport[][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(10);
      const at = Date.now() + FIRE_AHEAD_MS;
      rounds.push(await Promise.all(workers.map((worker) => worker.flush(at))));
    }
    const tally = await load.stop();
    const { final, figures } = await run.settle({ flusher: workers[0], targets, start, tally, sampler });

    const reports = [...rounds.flat(), ...final];
    const applyingPerRound = rounds.map((round) => round.filter((report) => report.batches > 0).length);
    const roundsWithWork = applyingPerRound.filter((count) => count > 0).length;
    const parallelRounds = applyingPerRound.filter((count) => count > 1).length;
    // Flushes of one round that overlapped in time: the latest start before the earliest end.
    const overlappingRounds = rounds.filter(
      (round) => Math.max(...round.map((r) => r.startedAt)) < Math.min(...round.map((r) => r.endedAt)),
    ).length;
    const ledgerRows = (await deployment.ledgerRows()) - ledgerBefore;
    const details = {
      seed,
      rounds: ROUNDS,
      roundsWithWork,
      parallelRounds,
      overlappingRounds,
      meanInstancesApplying: Number((applyingPerRound.reduce((a, b) => a + b, 0) / ROUNDS).toFixed(2)),
      batchesApplied: total(reports, 'batches'),
      ledgerRows,
      busyShards: total(reports, 'busyShards'),
      slowestFlushMs: Math.round(Math.max(...reports.map((report) => report.durationMs))),
    };
    run.record('7 five simultaneous flushers', figures, details);

    expect(figures.wrong).toEqual([]);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
    expect(figures.inDatabase).toBe(figures.acknowledged);
    expect(tally.calls.refused, [...tally.errors].join(', ')).toBe(0);
    expect(reports.filter((report) => report.error).map((report) => report.error!.message)).toEqual([]);
    expect(ledgerRows).toBe(details.batchesApplied);
    // Every round had work (the load never stops), and in most of them more than one instance applied
    // batches: the shards were spread over the instances, not taken by one while the others waited.
    expect(roundsWithWork).toBe(ROUNDS);
    expect(parallelRounds).toBeGreaterThan(ROUNDS / 2);
  });
});
