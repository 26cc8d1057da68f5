// Chaos scenario 10 (issue 3): a randomised soak. Three instances under continuous load, flushing in
// loops, go through a seeded mix of faults (instances SIGKILLed and restarted, frozen with SIGSTOP past
// their lease and thawed, the database resetting or dropping connections, one instance cut off from
// Redis, storms of simultaneous flushes) for CHAOS_SOAK_MS (default 120 s). Redis itself never loses
// data here, so the final check is exact: after a final flush, database == start + acknowledged deltas
// for every counter (lost 0, duplicated 0), the ledger holds exactly the batches applied, and no
// database value ever went backwards.
//
// The seed (CHAOS_SEED, random by default) is printed first: the same seed gives the same fault
// schedule and the same load choices. Timing still varies from run to run, as it does in production.
import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { insertArticleTargets, insertRemarkTargets, readTargets } from '../harness/counter-targets.js';
import { FAULT_KINDS, faultSchedule } from '../harness/fault-schedule.js';
import { total } from '../harness/final-flush.js';
import { SoakFleet } from '../harness/soak-fleet.js';
import { sleep, within } from '../harness/time.js';
import type { ChaosWorker } from '../harness/chaos-worker.js';

const SOAK_MS = Number(process.env.CHAOS_SOAK_MS ?? 120_000);
const SEED = process.env.CHAOS_SEED === undefined ? randomInt(1, 2 ** 31 - 1) : Number(process.env.CHAOS_SEED);
const INSTANCES = 3;
const SHARDS = 8;
const WARMUP_MS = 1_000;

describe.each(CHAOS_DATABASES)('scenario 10: randomised soak, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it(
    `a seeded mix of faults for ${SOAK_MS} ms: exact in the end`,
    async () => {
      const schedule = faultSchedule(SEED, SOAK_MS, INSTANCES);
      console.log(
        `chaos 10 soak on ${databaseName}: CHAOS_SEED=${SEED} CHAOS_SOAK_MS=${SOAK_MS} (${schedule.length} episodes planned)`,
      );
      const run = await scenario.deploy('s10', { shards: SHARDS });
      const { deployment } = run;
      const { observer, prefix } = deployment;
      const targets = [
        ...(await insertArticleTargets(observer, 100)),
        ...(await insertRemarkTargets(observer, 50, prefix)),
      ];
      const start = await readTargets(observer, targets);
      const ledgerBefore = await deployment.ledgerRows();
      const fleet = await SoakFleet.start(deployment, INSTANCES);
      const sampler = deployment.startSampler(targets, 200);
      const load = fleet.startLoad(targets, SEED);
      await sleep(WARMUP_MS);

      const deadline = Date.now() + SOAK_MS;
      let episodes = 0;
      for (const episode of schedule) {
        // Every kind of fault comes once, even past the deadline of a short soak; then until the deadline.
        const covering = episodes < FAULT_KINDS.length;
        if (!covering && Date.now() >= deadline) break;
        await sleep(covering ? episode.quietMs : Math.min(episode.quietMs, Math.max(0, deadline - Date.now())));
        await fleet.apply(episode);
        episodes++;
      }
      const faultedMs = Date.now() - (deadline - SOAK_MS);

      const tally = await load.stop();
      await fleet.loops.stop();
      // The invariant holds once the faults are over: the last episode may have just ended, with the
      // flushing instance still reconnecting to Redis (it refuses meanwhile, as it should). Wait for it.
      await within(reachesRedis(fleet.workers[0]), 10_000, 'the flushing instance reaching Redis again');
      const { final, figures } = await run.settle({
        flusher: fleet.workers[0],
        targets,
        start,
        tally,
        sampler,
        timeoutMs: 30_000,
      });
      const ledgerRows = (await deployment.ledgerRows()) - ledgerBefore;
      const reports = [...fleet.reports(), ...final];
      const reportedBatches = total(reports, 'batches');
      const faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, fleet.applied[kind]]));
      const details = {
        seed: SEED,
        soakMs: SOAK_MS,
        faultedMs,
        episodesPlanned: schedule.length,
        episodesRun: episodes,
        ...faults,
        refused: tally.calls.refused,
        errors: Object.fromEntries(tally.errors),
        flushes: reports.length,
        failedFlushes: reports.filter((report) => report.error).length,
        recoveredBatches: total(reports, 'recoveredBatches'),
        reportedBatches,
        unreportedBatchesOfKilled: fleet.unreportedBatches,
        batchesApplied: reportedBatches + fleet.unreportedBatches,
        ledgerRows,
        schedule,
      };
      run.record('10 randomised soak', figures, details);

      expect(figures.wrong).toEqual([]);
      expect(figures).toMatchObject({ lost: 0, duplicated: 0, backwards: 0 });
      // Exact, not merely within the uncertain increments: each of those was sent into a cut Redis
      // link or failed before reaching Redis (see soak-fleet.ts), so none may be in the database.
      expect(figures.inDatabase).toBe(figures.acknowledged);
      expect(ledgerRows).toBe(details.batchesApplied);
      expect(final.filter((report) => report.error)).toEqual([]);
      // Every kind of fault happened.
      expect(Object.entries(faults).filter(([, count]) => count === 0)).toEqual([]);
    },
    SOAK_MS + 120_000,
  );
});

/** Resolves once the worker's Redis connection answers (its `status()` reaches Redis). */
async function reachesRedis(worker: ChaosWorker): Promise<void> {
  while (!(await worker.status()).redisAvailable) await sleep(50);
}
