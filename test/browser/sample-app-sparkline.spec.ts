import { describe, expect, it } from 'vitest';
import { CounterService } from '../../lib/index.js';
import { Solution } from '../../sample-app/src/solutions/solution.entity.js';
import { chromiumAvailable } from '../support/chromium.js';
import { HOUR_MS, hourOf, insideOneHour } from '../support/one-hour.js';
import { usePageHarness } from './page-harness.js';

// The page's globals, as the callbacks run in Chromium use them: the project compiles without the DOM lib.
interface PageNode {
  textContent: string | null;
  dataset: Record<string, string | undefined>;
  getAttribute(name: string): string | null;
}
declare const document: {
  querySelector(selector: string): PageNode | null;
  querySelectorAll(selector: string): PageNode[];
  getElementById(id: string): PageNode | null;
};

/** A bucket as the sparkline's bars carry it, and as the route and `series` give it. */
interface Hour {
  start: string;
  value: number;
}

// The inspector's sparkline of a solution's views per hour, in headless Chromium: live from
// `CounterService.series` while the views wait in Redis, and equal to the CounterBucket rows in SQL
// once flushed, bar for bar.
describe.skipIf(!chromiumAvailable())("the sample app's views-per-hour sparkline in Chromium", () => {
  const harness = usePageHarness('sparkline-page');

  /** The bars the page shows, oldest first. */
  const shownHours = () =>
    harness.page.$$eval('#views-sparkline rect', (bars) =>
      bars.map((bar) => ({ start: String(bar.dataset.start), value: Number(bar.dataset.value) })),
    );
  /** Waits until the sparkline's last bar, this hour, shows `views`. */
  const waitForThisHour = (views: number) =>
    harness.page.waitForFunction(
      (expected) => document.querySelector('#views-sparkline rect:last-of-type')?.dataset.value === expected,
      {},
      String(views),
    );
  /** Waits until the inspector shows no view waiting for a flush: "Flush now" has landed. */
  const waitForNothingPending = () =>
    harness.page.waitForFunction(() => document.querySelector('[data-pending="view_count"]')?.textContent === '0');
  /** The solution's hour buckets of `view_count` in SQL, zero-filled over the hours `shown` covers. */
  const sqlHours = async (id: number, shown: Hour[]): Promise<Hour[]> => {
    const rows = await harness.sql<{ bucket_start: number | string; value: number | string }>(
      'SELECT bucket_start, value FROM counter_bucket ' +
        `WHERE entity = 'solutions' AND row_id = '${id}' AND counter = 'view_count' AND granularity = 'hour'`,
    );
    const stored = new Map(rows.map((row) => [Number(row.bucket_start) * 1_000, Number(row.value)]));
    return shown.map(({ start }) => ({ start, value: stored.get(Date.parse(start)) ?? 0 }));
  };
  /** `CounterService.series` over the hours `shown` covers, as JSON gives it. */
  const liveHours = async (id: number, shown: Hour[]): Promise<Hour[]> => {
    const series = await harness.app.get(CounterService).series(Solution, id, 'view_count', {
      granularity: 'hour',
      since: Date.parse(shown[0]!.start),
      until: Date.parse(shown.at(-1)!.start) + HOUR_MS,
    });
    return series.map(({ start, value }) => ({ start: start.toISOString(), value }));
  };

  it('shows views per hour live, and the hour buckets SQL has once flushed', async () => {
    const { page, base } = harness;
    await page.goto(`${base}/`);
    await page.waitForSelector('#inspect-solution option[value="2"]');
    await page.click('#flush-toggle');
    await page.waitForFunction(() => document.getElementById('flush-schedule')?.textContent === 'paused');
    await insideOneHour(60_000);
    const hour = hourOf(Date.now());

    // Three views: picking the solution, then opening it twice by its title. None reaches SQL while paused.
    await page.select('#inspect-solution', '2');
    await page.click('#solution-2 h3 a');
    await page.click('#solution-2 h3 a');
    await waitForThisHour(3);
    const shown = await shownHours();
    expect(shown).toHaveLength(24);
    expect(shown.map(({ start }) => Date.parse(start))).toEqual(
      Array.from({ length: 24 }, (_, index) => hour - (23 - index) * HOUR_MS),
    );
    expect(shown).toEqual(await liveHours(2, shown));
    expect(shown.map(({ value }) => value)).toEqual([...Array<number>(23).fill(0), 3]);
    expect(await sqlHours(2, shown)).toEqual(shown.map(({ start }) => ({ start, value: 0 })));
    const clock = new Date(hour).toISOString().slice(11, 16);
    expect(await page.$eval('#views-last-hour', (node) => node.textContent)).toBe(`${clock} UTC: 3 views`);
    const label = await page.$eval('#views-sparkline svg', (node) => node.getAttribute('aria-label'));
    expect(label).toMatch(new RegExp(`^Views per hour over the last 24 hours: .*, ${clock} 3 \\(UTC\\)$`));

    await page.click('#flush-now');
    await waitForNothingPending();
    expect(await sqlHours(2, shown)).toEqual(await shownHours());
    expect(await shownHours()).toEqual(shown);

    // One more view: live at once, in SQL after the next flush.
    await page.click('#solution-2 h3 a');
    await waitForThisHour(4);
    expect(await shownHours()).toEqual(await liveHours(2, shown));
    expect((await sqlHours(2, shown)).at(-1)).toEqual({ start: shown.at(-1)!.start, value: 3 });
    await page.click('#flush-now');
    await waitForNothingPending();
    const flushed = await shownHours();
    expect(flushed.at(-1)?.value).toBe(4);
    expect(await sqlHours(2, shown)).toEqual(flushed);
    expect(await page.$eval('#views-last-hour', (node) => node.textContent)).toBe(`${clock} UTC: 4 views`);

    await page.click('#flush-toggle');
    await page.waitForFunction(() => document.getElementById('flush-schedule')?.textContent === 'every 1.0 s');
    expect(harness.pageErrors).toEqual([]);
  });
});
