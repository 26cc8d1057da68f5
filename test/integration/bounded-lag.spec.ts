import { describe, expect, it, vi } from 'vitest';
import { CounterFlusher } from '../../lib/flush/counter.flusher.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { DATABASES } from '../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { articleCounts, insertArticles } from '../support/rows.js';

const INTERVAL_MS = 100;
const LOAD_MS = 2_000;

// G3: under steady load the database trails Redis by at most one flush interval plus one flush's
// duration. The scheduled flush runs on its own timer; the test samples both sides and times every
// flush. A flush that outlasts the interval is followed by the next one at once, so the time between
// two flushes' starts is the interval or the flush before, whichever is longer.
describe.each(DATABASES)('bounded lag on %s', (databaseName) => {
  const suite = useCounterSuite(databaseName, 'lag', { flushEnabled: true, flushIntervalMs: INTERVAL_MS });

  it('keeps the database within one interval plus one flush of the live value', async () => {
    const { counter } = suite;
    const [id] = await insertArticles(counter.dataSource, [0]);
    const flusher = counter.app.get(CounterFlusher);
    const realFlush = flusher.flush.bind(flusher);
    const flushMs: number[] = [];
    let lastFlush: Promise<unknown> = Promise.resolve();
    vi.spyOn(flusher, 'flush').mockImplementation(() => {
      const flushed = realFlush().then((report) => {
        flushMs.push(report.durationMs);
        return report;
      });
      lastFlush = flushed;
      return flushed;
    });
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
    // The flush running at the last sample counts too.
    await lastFlush;
    vi.restoreAllMocks();
    // The longest flush seen bounds "one flush's duration"; a slack covers timer and query jitter.
    const longest = Math.max(...flushMs);
    const bound = Math.max(INTERVAL_MS, longest) + longest + 150;
    const lagging = stored.filter(({ at, value }) => {
      const due = [...live].reverse().find((sample) => sample.at <= at - bound);
      return due !== undefined && value < due.value;
    });
    expect(flushMs.length).toBeGreaterThan(5);
    expect(stored.length).toBeGreaterThan(20);
    expect(live.at(-1)!.value).toBeGreaterThan(100);
    expect(lagging, `lag bound ${bound} ms`).toEqual([]);
  });
});
