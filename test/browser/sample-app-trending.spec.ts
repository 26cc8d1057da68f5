import { describe, expect, it } from 'vitest';
import { chromiumAvailable } from '../support/chromium.js';
import { usePageHarness } from './page-harness.js';

// The page's globals, as the callbacks run in Chromium use them: the project compiles without the DOM lib.
interface PageNode {
  textContent: string | null;
  hidden: boolean;
  dataset: Record<string, string | undefined>;
  getAttribute(name: string): string | null;
}
declare const document: {
  querySelector(selector: string): PageNode | null;
  querySelectorAll(selector: string): PageNode[];
  getElementById(id: string): PageNode | null;
};

const HOUR = 3_600;

/** A line of "Trending today", as the page shows it and as SQL ranks it. */
interface Trend {
  id: number;
  title: string;
  likes: number;
}

// "Trending today" in headless Chromium: empty on a fresh database (the demo's seeded likes are in the
// totals only), live while likes wait in Redis, and once flushed the solutions SQL ranks first by their
// likes in the last 24 hours, line for line: the rolling sums the flush keeps, which are the hour
// buckets' sums.
describe.skipIf(!chromiumAvailable())('"Trending today" on the sample app\'s page in Chromium', () => {
  const harness = usePageHarness('trending-page');

  /** The lines the panel shows, most liked first, with their text. */
  const shownTrends = () =>
    harness.page.$$eval('#trending-list li', (lines) =>
      lines.map((line) => ({
        id: Number(line.dataset.solution),
        title: line.querySelector('.title')?.textContent,
        likes: Number(line.dataset.likes),
        text: line.textContent,
      })),
    );
  /** Waits until the panel shows `likes`, line by line. */
  const waitForTrends = (likes: number[]) =>
    harness.page.waitForFunction(
      (expected) =>
        JSON.stringify([...document.querySelectorAll('#trending-list li')].map((line) => line.dataset.likes)) ===
        expected,
      {},
      JSON.stringify(likes.map(String)),
    );
  /** The rolling sums of like_count over '24h', ranked as `top` ranks them, with the solutions' titles. */
  const sqlTrends = async (): Promise<Trend[]> => {
    const rows = await harness.sql<{ row_id: string; value: number | string; title: string }>(
      'SELECT rolling.row_id, rolling.value, solution.title FROM counter_rolling_sum rolling ' +
        'JOIN solutions solution ON solution.id = CAST(rolling.row_id AS INTEGER) ' +
        `WHERE rolling.entity = 'solutions' AND rolling.counter = 'like_count' AND rolling."window" = '24h' ` +
        'AND rolling.value > 0 ' +
        'ORDER BY rolling.value DESC, CAST(rolling.row_id AS INTEGER) LIMIT 5',
    );
    return rows.map((row) => ({ id: Number(row.row_id), title: row.title, likes: Number(row.value) }));
  };
  /** The same from the hour buckets: each solution's sum over the 25 hours a '24h' window counts now. */
  const bucketTrends = async (): Promise<Trend[]> => {
    const from = Math.floor((Date.now() / 1_000 - 24 * HOUR) / HOUR) * HOUR;
    const rows = await harness.sql<{ row_id: string; value: number | string; title: string }>(
      'SELECT bucket.row_id, SUM(bucket.value) AS value, solution.title FROM counter_bucket bucket ' +
        'JOIN solutions solution ON solution.id = CAST(bucket.row_id AS INTEGER) ' +
        `WHERE bucket.entity = 'solutions' AND bucket.counter = 'like_count' AND bucket.granularity = 'hour' ` +
        `AND bucket.bucket_start >= ${from} GROUP BY bucket.row_id, solution.title HAVING SUM(bucket.value) > 0 ` +
        'ORDER BY SUM(bucket.value) DESC, CAST(bucket.row_id AS INTEGER) LIMIT 5',
    );
    return rows.map((row) => ({ id: Number(row.row_id), title: row.title, likes: Number(row.value) }));
  };
  const postSolution = async (title: string): Promise<number> => {
    const created = await fetch(`${harness.base}/problems/3/solutions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ title, content: 'From the top-left cell.' }),
    });
    return ((await created.json()) as { id: number }).id;
  };
  /** A like or an unlike as `user`, sent as another client (curl) would. */
  const likeAs = async (user: number, id: number, method: 'POST' | 'DELETE' = 'POST') => {
    const response = await fetch(`${harness.base}/solutions/${id}/like`, {
      method,
      headers: { 'X-User-Id': String(user) },
    });
    expect(response.status).toBe(200);
  };
  /** The signed-in user's like, by its button on the page. */
  const clickLike = async (id: number) => {
    const button = `#solution-${id} > .counts button.like`;
    await harness.page.click(button);
    await harness.page.waitForFunction(
      (selector) => document.querySelector(selector)?.getAttribute('aria-pressed') === 'true',
      {},
      button,
    );
  };
  const trendingRoute = async () => (await fetch(`${harness.base}/solutions/trending`)).json();

  it('ranks the solutions liked most in the last 24 hours live, and as SQL does once flushed', async () => {
    const { page, base } = harness;
    const bfs = await postSolution('Plain BFS');
    const astar = await postSolution('A* search');
    await page.goto(`${base}/`);
    await page.waitForSelector(`#solution-${astar} > .counts button.like[aria-pressed]`);
    await page.waitForFunction(() => document.getElementById('trending-empty')?.hidden === false);
    expect(await page.$eval('#trending-empty', (node) => node.textContent)).toBe('No likes in the last 24 hours yet.');
    expect(await shownTrends()).toEqual([]);
    expect(await sqlTrends()).toEqual([]);

    await page.click('#flush-toggle');
    await page.waitForFunction(() => document.getElementById('flush-schedule')?.textContent === 'paused');
    // After the flush that may have been running: nothing flushes until "Flush now".
    expect((await fetch(`${base}/flush/now`, { method: 'POST' })).status).toBe(200);
    // Liked in another order than the ranking's: the signed-in user (1) on the page, users 2-4 as other
    // clients. Solution 3's like is taken back.
    await clickLike(1);
    await clickLike(astar);
    for (const id of [astar, bfs, 2, 3]) await likeAs(2, id);
    for (const id of [astar, bfs, 2]) await likeAs(3, id);
    for (const id of [astar, bfs]) await likeAs(4, id);
    await likeAs(2, 3, 'DELETE');
    const expected = [
      { id: astar, title: 'A* search', likes: 4 },
      { id: bfs, title: 'Plain BFS', likes: 3 },
      { id: 2, title: 'Sort and two pointers', likes: 2 },
      { id: 1, title: 'One pass with a hash map', likes: 1 },
    ];
    // Waiting in Redis, none of it in SQL yet: ranked already, live.
    await waitForTrends([4, 3, 2, 1]);
    expect(await trendingRoute()).toEqual(expected);
    expect(await sqlTrends()).toEqual([]);

    await page.click('#flush-now');
    await expect.poll(sqlTrends, { timeout: 10_000 }).toEqual(expected);
    expect(await trendingRoute()).toEqual(expected);
    expect(await bucketTrends()).toEqual(expected);
    expect(await shownTrends()).toEqual([
      { ...expected[0], text: 'A* search +4 likes in 24 h' },
      { ...expected[1], text: 'Plain BFS +3 likes in 24 h' },
      { ...expected[2], text: 'Sort and two pointers +2 likes in 24 h' },
      { ...expected[3], text: 'One pass with a hash map +1 like in 24 h' },
    ]);
    expect(await page.$eval('#trending-empty', (node) => node.hidden)).toBe(true);

    // One more like, flushed on schedule: the panel follows, a tie ranked by id as SQL ranks it.
    await page.click('#flush-toggle');
    await page.waitForFunction(() => document.getElementById('flush-schedule')?.textContent === 'every 1.0 s');
    await likeAs(4, 2);
    // Live first, then in SQL once the next scheduled flush wrote it.
    await waitForTrends([4, 3, 3, 1]);
    await expect
      .poll(async () => (await sqlTrends()).map(({ id }) => id), { timeout: 10_000 })
      .toEqual([astar, 2, bfs, 1]);
    const flushed = await sqlTrends();
    expect(await bucketTrends()).toEqual(flushed);
    expect((await shownTrends()).map(({ id, title, likes }) => ({ id, title, likes }))).toEqual(flushed);
    expect(harness.pageErrors).toEqual([]);
  });
});
