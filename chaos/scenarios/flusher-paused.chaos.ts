// Chaos scenario 2 (issue 3): a flusher frozen with SIGSTOP past its lease while another instance takes
// the shard over, then resumed with SIGCONT: no batch is applied twice.
//
// The sleeper is stopped at a step (see FLUSH_STEPS) and frozen there, whole process, for longer than
// its lease. The taker keeps counting, then flushes: it finds the sleeper's batch and finishes it. The
// sleeper is thawed and goes on with its stale batch; its flush must answer without error and without a
// second write. Frozen inside the transaction, the sleeper still holds its uncommitted ledger row and row
// locks: the taker's write of the same batch waits on them, and fails on the ledger's key once the
// sleeper commits.
import { describe, expect, it } from 'vitest';
import type { FlushStep, WireFlushReport } from '../worker/worker-protocol.js';
import { CHAOS_DATABASES } from '../harness/chaos-deployment.js';
import { useChaosScenario } from '../harness/chaos-scenario.js';
import { insertArticleTargets, readTargets } from '../harness/counter-targets.js';
import { total } from '../harness/final-flush.js';
import { batchInLedger } from '../harness/protocol-state.js';
import { sleep, within } from '../harness/time.js';

const LEASE_MS = 1_000;
const ROWS = 40;
/** How long the taker's flush is given before the sleeper is thawed. */
const TAKEOVER_WAIT_MS = 1_500;

const PAUSE_STEPS: FlushStep[] = ['after-claim', 'in-transaction', 'after-commit'];

describe.each(CHAOS_DATABASES)('scenario 2: a flusher paused past its lease, then resumed, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it.each(PAUSE_STEPS)('frozen at %s: the batch is applied once', async (step) => {
    const run = await scenario.deploy(`s2-${step}`, { shards: 2, flushLeaseMs: LEASE_MS });
    const { deployment, seed } = run;
    const { observer } = deployment;
    const targets = await insertArticleTargets(observer, ROWS);
    const start = await readTargets(observer, targets);
    const ledgerBefore = await deployment.ledgerRows();
    const [sleeper, taker] = await deployment.startWorkers(['sleeper', 'taker']);
    const sampler = deployment.startSampler(targets);
    const load = deployment.startLoad({ targets, workers: [sleeper, taker], seed });
    await sleep(400);

    await load.useWorkers([]);
    await sleeper.pauseAt(step);
    const reaching = sleeper.reached(step);
    const sleeperFlush = sleeper.flush();
    const reached = await within(reaching, 10_000, `sleeper reaching ${step}`);
    await sleeper.signal('SIGSTOP');

    // The lease runs out while the sleeper is frozen; the taker keeps counting meanwhile.
    await load.useWorkers([taker]);
    await sleep(LEASE_MS + 300);
    await load.useWorkers([]);
    const takeover = taker.flush();
    const takeoverSettled = await Promise.race([takeover.then(() => true), sleep(TAKEOVER_WAIT_MS).then(() => false)]);

    await sleeper.signal('SIGCONT');
    await sleeper.resume();
    const late = await within(sleeperFlush, 15_000, 'the thawed sleeper finishing its flush');
    const taken = await within(takeover, 15_000, "the taker's flush");

    await load.useWorkers([sleeper, taker]);
    await sleep(300);
    const tally = await load.stop();
    const { final, figures } = await run.settle({ flusher: taker, targets, start, tally, sampler });
    const reports: WireFlushReport[] = [late, taken, ...final];
    const ledgerRows = (await deployment.ledgerRows()) - ledgerBefore;
    const details = {
      seed,
      sleeperBatches: late.batches,
      takeoverBatches: taken.batches,
      takeoverRecovered: taken.recoveredBatches,
      takeoverWaitedForSleeper: !takeoverSettled,
      refusedIncrements: tally.calls.refused,
      sleeperFlushError: late.error?.message ?? 'none',
      batchesApplied: total(reports, 'batches'),
      ledgerRows,
    };
    run.record(`2 frozen at ${step}`, figures, details);

    expect(figures.wrong).toEqual([]);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, backwards: 0 });
    expect(figures.inDatabase).toBe(figures.acknowledged);
    // A process frozen longer than redisCommandTimeoutMs wakes up to its timers before its sockets: a
    // command whose reply sat unread in the kernel times out, and the connection is replaced. So the
    // thawed sleeper may report a Redis timeout, and refuse increments while it reconnects; both are
    // fail-fast outcomes (nothing acknowledged is lost, nothing is counted twice), counted in the figures.
    const unavailable = (message: string) =>
      message.startsWith('Redis did not answer') || message.startsWith('Redis is not available');
    expect(
      [...tally.errors.keys()].filter((name) => name !== 'CounterStoreUnavailableError'),
      JSON.stringify([...tally.firstMessages]),
    ).toEqual([]);
    expect([late.error?.message].filter((message) => message !== undefined && !unavailable(message))).toEqual([]);
    expect([taken, ...final].filter((report) => report.error).map((report) => report.error!.message)).toEqual([]);
    // Every transaction that committed is one ledger row and one reported batch: none was applied twice.
    expect(ledgerRows).toBe(details.batchesApplied);
    expect(await batchInLedger(observer, reached.batchId!)).toBe(true);
    // The taker found the frozen batch (left in Redis at each of these steps) and finished it.
    expect(taken.recoveredBatches).toBeGreaterThanOrEqual(1);
    if (step === 'in-transaction') {
      // The sleeper's COMMIT went through once thawed; the taker's write of the same batch waited for it
      // and was refused by the ledger's key.
      expect(details.takeoverWaitedForSleeper).toBe(true);
      expect(late.batches).toBeGreaterThanOrEqual(1);
    }
  });
});
