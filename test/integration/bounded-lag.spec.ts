import { describe, expect, it } from 'vitest';
import { CounterLedgerEntry } from '../../lib/index.js';
import { Article } from '../fixtures/entities.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { DATABASES } from '../../support/databases.js';
import { articleCounts, insertArticles } from '../../support/rows.js';

const INTERVAL_MS = 100;
const LOAD_MS = 2_000;
/** A 1-row flush plus timer delays on a busy 2-core machine, with margin: the parallel suite sees lags of 96–127 ms. */
const FLUSH_ALLOWANCE_MS = 150;
const LAG_CEILING_MS = INTERVAL_MS + FLUSH_ALLOWANCE_MS;

// G3: under steady load the database trails Redis by at most one flush interval plus one flush's
// duration. The scheduled flush runs on its own timer; the test samples both sides and checks that
// every database value includes every change made more than LAG_CEILING_MS before it was read.
describe.each(DATABASES)('bounded lag on %s', (databaseName) => {
  const suite = useCounterSuite(databaseName, 'lag', { flushEnabled: true, flushIntervalMs: INTERVAL_MS });

  it('keeps the database within one interval plus one flush of the live value', async () => {
    const { counter } = suite;
    const [id] = await insertArticles(counter.dataSource, [0]);
    const ledger = counter.dataSource.getRepository(CounterLedgerEntry);
    const batchesBefore = await ledger.count();
    const live: Array<{ at: number; value: number }> = [{ at: Date.now(), value: 0 }];
    const stored: Array<{ at: number; value: number }> = [];
    const end = Date.now() + LOAD_MS;
    const load = (async () => {
      while (Date.now() < end) {
        const value = await counter.counters.increment(Article, id, 'like_count');
        live.push({ at: Date.now(), value });
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const sampler = (async () => {
      while (Date.now() < end) {
        // The database's answer is at least as new as the moment it was asked.
        const at = Date.now();
        const value = (await articleCounts(counter.dataSource, [id])).get(id)!.likes;
        stored.push({ at, value });
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    await Promise.all([load, sampler]);
    // How far behind each sample was: from the first change it did not include to when it was asked.
    const lags = stored.map(({ at, value }) => {
      const missed = live.find((sample) => sample.value > value);
      return missed && missed.at <= at ? at - missed.at : 0;
    });
    const worst = Math.max(...lags);
    expect(await ledger.count()).toBeGreaterThan(batchesBefore + 5);
    expect(stored.length).toBeGreaterThan(20);
    expect(live.at(-1)!.value).toBeGreaterThan(100);
    expect(worst, `the database trailed by ${worst} ms (ceiling ${LAG_CEILING_MS} ms)`).toBeLessThanOrEqual(
      LAG_CEILING_MS,
    );
  });
});
