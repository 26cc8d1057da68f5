import { createServer, type Server } from 'node:http';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { CounterService } from '../../lib/index.js';
import { chromiumAvailable } from '../support/chromium.js';
import { flushEverything } from '../support/flush-everything.js';
import { usePageHarness } from './page-harness.js';

const SCREENSHOT = 'test-output/browser/sample-app.png';

// The page's globals, as the callbacks run in Chromium use them: the project compiles without the DOM lib.
interface PageNode {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: {
  querySelector(selector: string): PageNode | null;
  querySelectorAll(selector: string): Iterable<PageNode>;
  getElementById(id: string): PageNode | null;
};
declare const window: { __xss?: unknown };

/** What a visitor might type, meant to run in the next visitor's browser. */
const XSS_COMMENT =
  "<script>window.__xss = 'script'; alert('script')</script>" +
  "<img src=x onerror=\"window.__xss = 'onerror'; alert('onerror')\">";
const XSS_TITLE = '<img src=x onerror="window.__xss = \'title\'">';

/** The SQL column of each count the page shows, by the `data-count` key's entity and field. */
const COLUMNS: Record<string, Record<string, string>> = {
  problem: { submissionCount: 'submission_count', passedCount: 'passed_count', solutionCount: 'solution_count' },
  solution: { likeCount: 'like_count', viewCount: 'view_count', commentCount: 'comment_count' },
  comment: { likeCount: 'like_count', replyCount: 'reply_count' },
};
const TABLES: Record<string, string> = { problem: 'problems', solution: 'solutions', comment: 'comments' };

// The page `npm start` serves, in headless Chromium: what it shows after likes, unlikes and comments
// matches the database once flushed, comments show their authors and counts their nouns, users' markup
// renders as text and runs nothing, and another site's form cannot post to it. (The flush's panels:
// sample-app-flush.spec.ts.)
describe.skipIf(!chromiumAvailable())("the sample app's page in Chromium", () => {
  const harness = usePageHarness('page');
  const { dialogs, pageErrors } = harness;

  const shown = (key: string) => harness.page.$eval(`[data-count="${key}"]`, (node) => Number(node.textContent));
  const waitForShown = (key: string, value: number) =>
    harness.page.waitForFunction(
      (selector, expected) => document.querySelector(selector)?.textContent === String(expected),
      {},
      `[data-count="${key}"]`,
      value,
    );
  const likeButton = '#solution-1 > .counts button.like';
  const waitForPressed = (pressed: boolean) =>
    harness.page.waitForFunction(
      (selector, expected) => document.querySelector(selector)?.getAttribute('aria-pressed') === expected,
      {},
      likeButton,
      String(pressed),
    );
  const signInAs = async (userId: number, likesSolution1: boolean) => {
    await harness.page.select('#user', String(userId));
    await waitForPressed(likesSolution1);
  };
  const postComment = async (text: string) => {
    const { page } = harness;
    await page.type('#solution-1 .comment-form textarea', text);
    await page.click('#solution-1 .comment-form button[type="submit"]');
    await page.waitForFunction(
      (expected) =>
        [...document.querySelectorAll('#solution-1 .comment .content')].some((n) => n.textContent === expected),
      {},
      text,
    );
  };

  it('likes as two users, unlikes, comments, and shows what the database holds after a flush', async () => {
    const { app, base, page } = harness;
    // A title with markup, posted the way curl would (no Origin): the page must show it as text.
    const created = await fetch(`${base}/problems/3/solutions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: XSS_TITLE, content: 'BFS from the top-left cell.' }),
    });
    const solution = (await created.json()) as { id: number };

    await page.goto(`${base}/`);
    await page.waitForSelector(`${likeButton}[aria-pressed]`);
    const likes = await shown('solution:1:likeCount');
    const comments = await shown('solution:1:commentCount');

    await signInAs(1, false);
    await page.click(likeButton);
    await waitForShown('solution:1:likeCount', likes + 1);
    await waitForPressed(true);

    await signInAs(2, false);
    await page.click(likeButton);
    await waitForShown('solution:1:likeCount', likes + 2);
    await waitForPressed(true);
    await page.click(likeButton);
    await waitForShown('solution:1:likeCount', likes + 1);
    await waitForPressed(false);

    await postComment('Looking up first also handles target = 2x.');
    await waitForShown('solution:1:commentCount', comments + 1);
    await postComment(XSS_COMMENT);
    await waitForShown('solution:1:commentCount', comments + 2);

    // Users' markup is text: nothing ran, no element was made of it.
    expect(await page.$eval(`#solution-${solution.id} .title`, (node) => node.textContent)).toBe(XSS_TITLE);
    expect(await page.$$eval('#problems img, #problems script', (nodes) => nodes.length)).toBe(0);
    expect(await page.evaluate(() => window.__xss)).toBeUndefined();

    // A comment shows its author (the user signed in when it was posted); a count of one, its noun's singular.
    const authors = await page.$$eval('#solution-1 .comment .author', (nodes) => nodes.map((n) => n.textContent));
    expect(authors).toEqual(['Alan', 'Grace', 'Ada', 'Grace', 'Grace']);
    const unit = (key: string) => page.$eval(`[data-unit="${key}"]`, (node) => node.textContent);
    expect(await unit('solution:2:commentCount')).toBe('comment');
    expect(await unit('comment:1:replyCount')).toBe('reply');
    expect(await unit('comment:2:replyCount')).toBe('replies');
    expect(await unit('solution:1:commentCount')).toBe('comments');

    await flushEverything(app.get(CounterService));
    await page.reload();
    await page.waitForSelector(`${likeButton}[aria-pressed]`);
    await page.waitForFunction(() => document.getElementById('status-pending')?.textContent === '0');
    const displayed = Object.fromEntries(
      await page.$$eval('[data-count]', (nodes) =>
        nodes.map((node) => [node.getAttribute('data-count') as string, Number(node.textContent)]),
      ),
    );
    expect(displayed['solution:1:likeCount']).toBe(likes + 1);
    expect(displayed['solution:1:commentCount']).toBe(comments + 2);
    expect(displayed).toEqual(await countsInDatabase(app.get(DataSource)));

    const dataSource = app.get(DataSource);
    expect(await dataSource.query("SELECT user_id FROM likes WHERE target_type = 'solution'")).toEqual([
      { user_id: 1 },
    ]);
    const stored = await dataSource.query(
      'SELECT content FROM comments WHERE solution_id = 1 ORDER BY id DESC LIMIT 2',
    );
    expect(stored).toEqual([{ content: XSS_COMMENT }, { content: 'Looking up first also handles target = 2x.' }]);
    const written = await dataSource.query(
      'SELECT author_id FROM comments WHERE solution_id = 1 ORDER BY id DESC LIMIT 2',
    );
    expect(written).toEqual([{ author_id: 2 }, { author_id: 2 }]);

    expect(await page.evaluate(() => window.__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
    mkdirSync('test-output/browser', { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it("refuses another site's form posting a comment", async () => {
    const { app, base, page } = harness;
    // localhost is another site than 127.0.0.1: Chromium sends Origin and Sec-Fetch-Site: cross-site.
    const forger = await serve(
      `<form method="post" action="${base}/solutions/1/comments">` +
        '<input name="content" value="posted by another site"></form>' +
        '<script>document.forms[0].submit()</script>',
    );
    try {
      const [response] = await Promise.all([
        page.waitForResponse((candidate) => candidate.url() === `${base}/solutions/1/comments`),
        page.goto(`http://localhost:${(forger.address() as AddressInfo).port}/`),
      ]);
      expect(response.status()).toBe(403);
      const forged = await app
        .get(DataSource)
        .query("SELECT COUNT(*) AS n FROM comments WHERE content = 'posted by another site'");
      expect(forged).toEqual([{ n: 0 }]);
    } finally {
      forger.close();
    }
  });
});

/** Every count the page shows, read from SQL, keyed as the page's `data-count` attributes. */
async function countsInDatabase(dataSource: DataSource): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const [entity, columns] of Object.entries(COLUMNS)) {
    const rows: Record<string, unknown>[] = await dataSource.query(`SELECT * FROM ${TABLES[entity]}`);
    for (const row of rows) {
      for (const [field, column] of Object.entries(columns))
        counts[`${entity}:${row.id}:${field}`] = Number(row[column]);
    }
  }
  return counts;
}

/** A page of another site, on a free loopback port. */
async function serve(html: string): Promise<Server> {
  const server = createServer((_, response) => response.writeHead(200, { 'Content-Type': 'text/html' }).end(html));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
