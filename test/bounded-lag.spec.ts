import { describe, expect, it } from 'vitest';
import { useCounterSuite } from './support/counter-suite.js';
import { DATABASES } from './support/databases.js';
import { Article } from './support/entities.js';
import { articleCounts, insertArticles } from './support/rows.js';

const INTERVAL_MS = 100;
const LOAD_MS = 2_000;

// G3: under steady load the database trails Redis by at most one flush interval plus one flush's
// duration. The scheduled flush runs on its own timer; the test samples both sides.
describe.each(DATABASES)('bounded lag on %s', (databaseName) => {
  const suite = useCounterSuite(databaseName, 'lag', { flushEnabled: true, flushIntervalMs: INTERVAL_MS });

  it('keeps the database within one interval plus one flush of the live value', async () => {
    const { counter } = suite;
    const [id] = await insertArticles(counter.dataSource, [0]);
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
        const value = (await articleCounts(counter.dataSource, [id])).get(id)!.likes;
        stored.push({ at: Date.now(), value });
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    await Promise.all([load, sampler]);

    // The longest flush seen bounds "one flush's duration"; a slack covers timer and query jitter.
    const flushMs = (await counter.counters.flush()).durationMs;
    const bound = INTERVAL_MS + Math.max(flushMs, 50) + 150;
    const lagging = stored.filter(({ at, value }) => {
      const due = [...live].reverse().find((sample) => sample.at <= at - bound);
      return due !== undefined && value < due.value;
    });
    expect(stored.length).toBeGreaterThan(20);
    expect(live.at(-1)!.value).toBeGreaterThan(100);
    expect(lagging, `lag bound ${bound} ms`).toEqual([]);
  });
});
