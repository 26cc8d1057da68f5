import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { chromiumAvailable } from '../support/chromium.js';
import { usePageHarness } from './page-harness.js';

/**
 * Where the screenshots go: test-output/ (not in git), or docs/screenshots/, README.md's, when
 * scripts/screenshots.sh makes them (COUNTER_SCREENSHOTS_DIR): a test run leaves the tree as it was.
 */
const SCREENSHOTS = process.env.COUNTER_SCREENSHOTS_DIR ?? 'test-output/browser';

// The page's globals, as the callbacks run in Chromium use them: the project compiles without the DOM lib.
interface PageNode {
  textContent: string | null;
  dataset: Record<string, string | undefined>;
  getAnimations(): unknown[];
  getBoundingClientRect(): { top: number; bottom: number };
}
declare const document: {
  querySelector(selector: string): PageNode | null;
  getElementById(id: string): PageNode | null;
  documentElement: { scrollWidth: number };
};

interface SqlCounts {
  like_count: number;
  view_count: number;
}

// The page's view of the flush, in headless Chromium, checked against SQL: live, SQL and pending values
// while flushing is paused and after "Flush now", a burst's tally (1,000 changes, the statements and rows
// they took, nothing lost), other clients' changes lighting up, and a layout that fits a phone.
describe.skipIf(!chromiumAvailable())("the sample app's flush panels in Chromium", () => {
  const harness = usePageHarness('flush-page');

  const sqlCounts = async (solutionId: number): Promise<SqlCounts> => {
    const [row] = await harness.sql<SqlCounts>(`SELECT like_count, view_count FROM solutions WHERE id = ${solutionId}`);
    return { like_count: Number(row?.like_count), view_count: Number(row?.view_count) };
  };
  const text = (selector: string) => harness.page.$eval(selector, (node) => node.textContent);
  const waitForText = (selector: string, expected: string) =>
    harness.page.waitForFunction(
      (target, value) => document.querySelector(target)?.textContent === value,
      {},
      selector,
      expected,
    );
  /** Waits until the inspector shows `live · in SQL · pending` for the counter, e.g. ['5,401', '5,400', '+1']. */
  const waitForValues = (counter: string, [live, sql, pending]: string[]) =>
    harness.page.waitForFunction(
      (name, values) =>
        ['live', 'sql', 'pending'].every(
          (kind, index) => document.querySelector(`[data-${kind}="${name}"]`)?.textContent === values[index],
        ),
      {},
      counter,
      [live, sql, pending],
    );
  const n = (value: number) => value.toLocaleString('en-US');
  const waitForBurst = (phase: string) =>
    harness.page.waitForFunction(
      (expected) => document.getElementById('burst')?.dataset.phase === expected,
      {
        timeout: 90_000,
      },
      phase,
    );
  const post = (path: string) => fetch(`${harness.base}${path}`, { method: 'POST' });

  it('shows live, SQL and pending values while flushing is paused, and SQL catching up on "Flush now"', async () => {
    const { page, base } = harness;
    await page.goto(`${base}/`);
    await page.waitForSelector('#inspect-solution option[value="2"]');
    await page.click('#flush-toggle');
    await waitForText('#flush-schedule', 'paused');
    await page.click('#flush-now');
    await page.waitForFunction(() => document.getElementById('status-pending')?.textContent === '0');
    const before = await sqlCounts(2);

    // Picking a solution opens it (a view); a like as the signed-in user. Neither reaches SQL while paused.
    await page.select('#inspect-solution', '2');
    await waitForValues('view_count', [n(before.view_count + 1), n(before.view_count), '+1']);
    await page.click('#solution-2 > .counts button.like');
    await waitForValues('like_count', [n(before.like_count + 1), n(before.like_count), '+1']);
    await new Promise((resolve) => setTimeout(resolve, 2_500)); // past two flush intervals
    expect(await sqlCounts(2)).toEqual(before);
    expect(await text('[data-pending="like_count"]')).toBe('+1');
    expect(await text('[data-pending="view_count"]')).toBe('+1');
    expect(await text('[data-pending="comment_count"]')).toBe('0');

    await page.click('#flush-now');
    await waitForValues('like_count', [n(before.like_count + 1), n(before.like_count + 1), '0']);
    await waitForValues('view_count', [n(before.view_count + 1), n(before.view_count + 1), '0']);
    expect(await sqlCounts(2)).toEqual({ like_count: before.like_count + 1, view_count: before.view_count + 1 });
    // One row, one batch: BEGIN, the ledger INSERT, one UPDATE, the buckets' INSERT, the likes' 24 h sums'
    // INSERT, COMMIT; and, the app's first flush of likes, the 24 h window made: its row, its sums' DELETE
    // and INSERT from the buckets.
    expect(await text('#flush-log li')).toMatch(/^\d\d:\d\d:\d\d — 1 row, 1 batch, \d+ ms, 9 SQL statements$/);
  });

  it('simulates a burst of 1,000 changes from 50 visitors, and tallies it against SQL', async () => {
    const { page } = harness;
    const before = await sqlCounts(2);
    await page.click('#burst-start');

    // Flushing is paused: every change waits in Redis, none in SQL.
    await waitForBurst('flushing');
    await waitForText('#burst-phase', 'All 1,000 requests answered; 1,000 changes wait for a flush…');
    await waitForValues('like_count', [n(before.like_count + 50), n(before.like_count), '+50']);
    await waitForValues('view_count', [n(before.view_count + 950), n(before.view_count), '+950']);
    expect(await sqlCounts(2)).toEqual(before);

    await page.click('#flush-now');
    await waitForBurst('done');
    const after = await sqlCounts(2);
    expect(after).toEqual({ like_count: before.like_count + 50, view_count: before.view_count + 950 });
    expect(await text('#burst-accepted')).toBe('1,000');
    expect(await text('#burst-accepted-detail')).toBe('950 views, +50 likes, 0 refused');
    // The one flush wrote the 1,000 changes as one row: BEGIN, the ledger INSERT, one UPDATE, one INSERT of
    // the hour and day buckets of both counters, one of the likes' 24 h sum, COMMIT.
    expect(await text('#burst-statements')).toBe('6');
    expect(await text('#burst-statements-detail')).toBe('1 UPDATE in 1 transaction');
    expect(await text('#burst-rows')).toBe('1');
    expect(await text('#burst-rows-detail')).toBe('1 flush, 1 batch');
    expect(await text('#burst-lost')).toBe('0');
    expect(await text('#burst-lost-detail')).toBe(`SQL: ${n(after.like_count)} likes, ${n(after.view_count)} views`);
    expect(
      await harness.sql(
        "SELECT COUNT(*) AS n FROM likes WHERE target_type = 'solution' AND target_id = 2 AND user_id > 4",
      ),
    ).toEqual([{ n: 50 }]);

    await page.click('#flush-toggle');
    await waitForText('#flush-schedule', 'every 1.0 s');
  });

  it("lights up the counts other clients change, not the page's own", async () => {
    const { page, base } = harness;
    const key = '[data-count="solution:3:likeCount"]';
    const shown = Number(await text(key));
    // Another client: user 3 likes solution 3 over the API.
    await fetch(`${base}/solutions/3/like`, { method: 'POST', headers: { 'X-User-Id': '3' } });
    await page.waitForFunction(
      (selector, expected) => {
        const node = document.querySelector(selector);
        return node?.textContent === expected && node.getAnimations().length > 0;
      },
      {},
      key,
      String(shown + 1),
    );
    // The page's own like shows at once, and no refresh lights it up.
    await page.click('#solution-3 > .counts button.like');
    await waitForText(key, String(shown + 2));
    await new Promise((resolve) => setTimeout(resolve, 2_500)); // past a refresh of the counts
    expect(await page.$eval(key, (node) => node.getAnimations().length)).toBe(0);
    expect(await text(key)).toBe(String(shown + 2));
  });

  it('writes the screenshots (desktop 1280 px, mobile 390 px) after a burst, and fits a 390 px screen', async () => {
    const { page, base } = harness;
    expect((await post('/flush/resume')).status).toBe(200);
    await page.setViewport({ width: 1280, height: 1000 });
    await page.goto(`${base}/`);
    await page.waitForSelector('#inspect-solution option[value="1"]');
    await page.select('#inspect-solution', '1');
    await page.click('#burst-start');
    // The page shows the last test's burst, done, until its first refresh after the click.
    await waitForBurst('sending');
    await waitForBurst('done');
    expect(await text('#burst-lost')).toBe('0');
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // the chart's next seconds
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: `${SCREENSHOTS}/page-desktop.png` });

    // The user picker sits above the header's rule line, not on it, on both screens.
    const pickerClearance = async () =>
      (await page.$eval('header', (node) => node.getBoundingClientRect().bottom)) -
      (await page.$eval('label.user', (node) => node.getBoundingClientRect().bottom));
    expect(await pickerClearance()).toBeGreaterThanOrEqual(8);

    await page.setViewport({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBe(390);
    expect(await pickerClearance()).toBeGreaterThanOrEqual(8);
    await page.screenshot({ path: `${SCREENSHOTS}/page-mobile.png`, fullPage: true });
    expect(harness.pageErrors).toEqual([]);
    expect(harness.dialogs).toEqual([]);
  });
});
