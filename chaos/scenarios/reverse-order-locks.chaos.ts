// Chaos scenario 8 (issue 3): a transaction outside the library locks the counted rows in the reverse
// order while several instances flush them (DESIGN.md G4). The flush's UPDATE takes a batch's rows
// lowest id first; the outside transaction takes the same rows highest first, one by one with short
// sleeps, so they wait on each other and deadlock now and then. The server breaks each deadlock by
// rolling one side back: when that is a flush's transaction, the library runs it again after a jittered
// backoff (5 attempts). No deadlock may reach a FlushReport, and the exact invariant must hold.
//
// Run on PostgreSQL (deadlock detection after deadlock_timeout, 1 s: the side that waited first is
// rolled back, usually the flush) and on MariaDB (detection at once: InnoDB rolls back the lighter
// transaction, usually the outside one) whatever CHAOS_DATABASES says.
import { describe, expect, it } from 'vitest';
import type { DatabaseName } from '../../support/databases.js';
import { Article } from '../../test/fixtures/entities.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { insertArticleTargets, readTargets } from '../harness/counter-targets.js';
import { total } from '../harness/final-flush.js';
import { FlushLoops } from '../harness/flush-loops.js';
import { ReverseOrderLocker } from '../harness/reverse-order-locker.js';
import { sleep } from '../harness/time.js';

const DATABASES: DatabaseName[] = ['postgres', 'mariadb'];
const INSTANCES = 3;
/** Few rows, few shards: every batch holds many of the rows the outside transaction locks. */
const ROWS = 30;
const SHARDS = 2;
const RUN_MS = 4_000;

describe.each(DATABASES)(
  'scenario 8: an outside transaction locking the rows in reverse order, on %s',
  (databaseName) => {
    const scenario = useChaosScenario(databaseName);

    it('flushes never report a deadlock, and the database is exact', async () => {
      const run = await scenario.deploy('s8', { shards: SHARDS });
      const { deployment, seed } = run;
      const { observer } = deployment;
      const targets = await insertArticleTargets(observer, ROWS);
      const start = await readTargets(observer, targets);
      const ledgerBefore = await deployment.ledgerRows();
      const ids = [...new Set(targets.map((target) => target.id as number))];
      const table = observer.getMetadata(Article).tableName;

      const workers = await deployment.startWorkers(Array.from({ length: INSTANCES }, (_, i) => `flusher-${i + 1}`));
      const sampler = deployment.startSampler(targets);
      const load = deployment.startLoad({ targets, workers, seed });
      const loops = new FlushLoops(20);
      for (const worker of workers) loops.add(worker);
      deployment.onClose(() => loops.stop());
      const locker = await ReverseOrderLocker.start(deployment.database, table, ids, {
        rowPauseMs: 1,
        transactionPauseMs: 5,
      });
      deployment.onClose(() => locker.close());

      await sleep(RUN_MS);
      const contention = await locker.stop();
      const tally = await load.stop();
      const reports = await loops.stop();
      const { final, figures } = await run.settle({ flusher: workers[0], targets, start, tally, sampler });
      const ledgerRows = (await deployment.ledgerRows()) - ledgerBefore;
      // The flushing sessions end with their workers: PostgreSQL publishes their deadlock counts then.
      await Promise.all(workers.map((worker) => worker.destroy()));
      await sleep(500);
      const server = await locker.close();

      const all = [...reports, ...final];
      const details = {
        seed,
        instances: INSTANCES,
        outsideTransactions: contention.transactions,
        outsideCommitted: contention.committed,
        outsideDeadlockVictim: contention.deadlocks,
        outsideLockTimeouts: contention.lockTimeouts,
        outsideWaitedStatements: contention.waitedStatements,
        outsideLongestWaitMs: contention.longestWaitMs,
        serverDeadlocks: server.serverDeadlocks,
        // The server's other deadlocks: broken by rolling back a flush's transaction (which the library ran
        // again), unless other sessions on the same server deadlocked meanwhile (the counter is server-wide).
        flushDeadlockVictims: server.serverDeadlocks - contention.deadlocks,
        serverRowLockWaits: server.serverRowLockWaits ?? 'n/a',
        flushes: reports.length,
        flushErrors: all.filter((report) => report.error).length,
        batchesApplied: total(all, 'batches'),
        ledgerRows,
      };
      run.record('8 reverse-order outside transaction', figures, details);

      expect(
        all.filter((report) => report.error).map((report) => `${report.error!.name}: ${report.error!.message}`),
      ).toEqual([]);
      expect(contention.otherErrors).toEqual([]);
      expect(contention.lockTimeouts).toBe(0);
      // The two sides did contend: the outside transaction waited for a flush, or deadlocked with one.
      expect(contention.waitedStatements + contention.deadlocks).toBeGreaterThan(0);
      expect(figures.wrong).toEqual([]);
      expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
      expect(figures.inDatabase).toBe(figures.acknowledged);
      expect(tally.calls.refused, [...tally.errors].join(', ')).toBe(0);
      expect(ledgerRows).toBe(details.batchesApplied);
    });
  },
);
