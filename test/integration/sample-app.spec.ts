import { randomBytes } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import request from 'supertest';
import type { App } from 'supertest/types.js';
import { DataSource } from 'typeorm';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { CounterBucket, CounterService, CounterStoreUnavailableError } from '../../lib/index.js';
import { Comment } from '../../sample-app/src/comments/comment.entity.js';
import { Problem } from '../../sample-app/src/problems/problem.entity.js';
import { Solution } from '../../sample-app/src/solutions/solution.entity.js';
import { createTestDatabase, DATABASES, type DatabaseName } from '../../support/databases.js';
import { setEnvironment } from '../../support/environment.js';
import { flushEverything } from '../support/flush-everything.js';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../../support/redis.js';
import { HOUR_MS, hourOf, insideOneHour } from '../support/one-hour.js';

/** A database of its own for the sample app, named by the DATABASE_URL the app reads. */
interface SampleDatabase {
  url: string;
  drop(): Promise<void>;
}

async function sampleDatabase(name: DatabaseName): Promise<SampleDatabase> {
  switch (name) {
    case 'sqlite': {
      // The file createTestDatabase makes (and deletes with its directory).
      const database = await createTestDatabase('sqlite');
      return { url: `sqlite://${String(database.options.database)}`, drop: () => database.drop() };
    }
    case 'mariadb': {
      const database = await createTestDatabase('mariadb');
      return { url: `mariadb://root@127.0.0.1:3306/${String(database.options.database)}`, drop: () => database.drop() };
    }
    case 'postgres': {
      // A database, not a schema: DATABASE_URL names no schema.
      const connection = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
      const unique = uniquePrefix('sample').replace(/-/g, '_');
      const admin = new pg.Client(connection);
      await admin.connect();
      await admin.query(`CREATE DATABASE "${unique}"`);
      await admin.end();
      return {
        url: `postgres://postgres@127.0.0.1:5432/${unique}`,
        drop: async () => {
          const dropper = new pg.Client(connection);
          await dropper.connect();
          await dropper.query(`DROP DATABASE "${unique}" WITH (FORCE)`);
          await dropper.end();
        },
      };
    }
  }
}

interface SolutionBody {
  id: number;
  likeCount: number;
  viewCount: number;
}

interface LikeBody {
  id: number;
  userId: number;
  liked: boolean;
  changed: boolean;
  like_count: number;
}

// The sample app the README's first command starts, end to end over HTTP: its routes answer with live
// counts, each user's like counts once (however often and concurrently it is sent), and the database
// gets every change once flushed.
describe.each(DATABASES)('the sample app on %s', (databaseName) => {
  const prefix = uniquePrefix('sample');
  const redis = testRedis();
  const adminToken = `admin-${randomBytes(16).toString('hex')}`;
  const environment = { DATABASE_URL: '', REDIS_URL, COUNTER_KEY_PREFIX: prefix, ADMIN_TOKEN: adminToken };
  let restoreEnvironment: (() => void) | undefined;
  let database: SampleDatabase;
  let app: INestApplication;
  let http: App;

  beforeAll(async () => {
    database = await sampleDatabase(databaseName);
    restoreEnvironment = setEnvironment({ ...environment, DATABASE_URL: database.url });
    const { AppModule } = await import('../../sample-app/src/app.module.js');
    app = await NestFactory.create(AppModule, { logger: ['error'], abortOnError: false });
    await app.init();
    http = app.getHttpServer() as App;
  });

  afterAll(async () => {
    await app?.close();
    restoreEnvironment?.();
    await deleteKeys(redis, prefix);
    redis.disconnect();
    await database?.drop();
  });

  afterEach(() => vi.restoreAllMocks());

  it('runs on the database DATABASE_URL names, and lists its routes at /', async () => {
    const { type } = app.get(DataSource).options;
    expect(type).toBe({ postgres: 'postgres', mariadb: 'mariadb', sqlite: 'better-sqlite3' }[databaseName]);
    const response = await request(http).get('/').expect(200);
    expect(Object.keys(response.body.routes)).toContain('POST /solutions/:id/like');
    expect(Object.keys(response.body.routes)).toContain('GET /health/counters');
    expect(Object.keys(response.body.routes)).toContain('POST /admin/counters/:entity/:counter/audit');
  });

  it("serves its page to browsers, and the page's data with live counts at /overview", async () => {
    const page = await request(http).get('/').set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8').expect(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.text).toContain('<script type="module" src="/assets/page.js"></script>');
    const script = await request(http).get('/assets/page.js').expect(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    await request(http).get('/assets/page.css').expect(200);
    await request(http).get('/assets/..%2Fsrc%2Fmain.ts').expect(404);

    const liked = (await request(http).post('/comments/2/like').set('X-User-Id', '1').expect(200)).body as LikeBody;
    const { problems } = (await request(http).get('/overview').expect(200)).body as {
      problems: { id: number; solutions: { id: number; comments: { id: number; likeCount: number }[] }[] }[];
    };
    expect(problems.map((problem) => problem.id)).toEqual([1, 2, 3]);
    expect(problems[0]?.solutions.map((solution) => solution.id)).toEqual([1, 2]);
    // The live value (flushed or not), from Redis through @LiveCounts() on nested relations.
    expect(problems[0]?.solutions[0]?.comments.find((comment) => comment.id === 2)?.likeCount).toBe(liked.like_count);
    await request(http).delete('/comments/2/like').set('X-User-Id', '1').expect(200);
  });

  // Before the other tests like solutions, and undoing its likes, so that each sees a fresh start.
  it('ranks solutions by their likes in the last 24 hours, live (GET /solutions/trending)', async () => {
    const counters = app.get(CounterService);
    const trending = async () => (await request(http).get('/solutions/trending').expect(200)).body as unknown;
    const post = async (title: string) => {
      const created = await request(http).post('/problems/3/solutions').send({ title, content: 'BFS.' }).expect(201);
      return (created.body as SolutionBody).id;
    };
    const like = (user: number, id: number) =>
      request(http).post(`/solutions/${id}/like`).set('X-User-Id', String(user)).expect(200);
    const unlike = (user: number, id: number) =>
      request(http).delete(`/solutions/${id}/like`).set('X-User-Id', String(user)).expect(200);

    // The app's scheduled flush paused, and the one it may be running over: likes wait until flushed here.
    await request(http).post('/flush/pause').expect(200);
    onTestFinished(async () => {
      await request(http).post('/flush/resume').expect(200);
    });
    await request(http).post('/flush/now').expect(200);
    // The seeded likes are in the totals only: nothing trends on a fresh database.
    await flushEverything(counters);
    expect(await trending()).toEqual([]);
    const [a, b, c] = [await post('Plain BFS'), await post('BFS with a deque'), await post('A* search')];
    /** Who likes what: c 4 likes, 2 three, a two (a third taken back), 1, 3 and b one each. */
    const likes: [number, number][] = [
      [1, a],
      [2, a],
      [3, a],
      [1, b],
      [1, c],
      [2, c],
      [3, c],
      [4, c],
      [1, 2],
      [2, 2],
      [3, 2],
      [4, 1],
      [2, 3],
    ];
    for (const [user, id] of likes) await like(user, id);
    await unlike(3, a);
    // Ties by id; b, liked once as 1 and 3 were, is sixth: left out. Live: the same before the flush.
    const ranked = [
      { id: c, title: 'A* search', likes: 4 },
      { id: 2, title: 'Sort and two pointers', likes: 3 },
      { id: a, title: 'Plain BFS', likes: 2 },
      { id: 1, title: 'One pass with a hash map', likes: 1 },
      { id: 3, title: 'Expand around centres', likes: 1 },
    ];
    expect(await trending()).toEqual(ranked);
    await flushEverything(counters);
    expect(await trending()).toEqual(ranked);
    expect(await counters.top(Solution, 'like_count', { since: Date.now() - 24 * HOUR_MS, limit: 10 })).toEqual([
      { id: c, value: 4 },
      { id: 2, value: 3 },
      { id: a, value: 2 },
      { id: 1, value: 1 },
      { id: 3, value: 1 },
      { id: b, value: 1 },
    ]);

    // Unlikes count in the window too: taken back, nothing trends.
    for (const [user, id] of likes) if (!(user === 3 && id === a)) await unlike(user, id);
    expect(await trending()).toEqual([]);
    await flushEverything(counters);
    expect(await trending()).toEqual([]);
    const index = (await request(http).get('/').expect(200)).body as { routes: Record<string, string> };
    expect(Object.keys(index.routes)).toContain('GET /solutions/trending');
  });

  it('counts likes per user, unlikes, views and submissions exactly, and flushes them into the database', async () => {
    const before = (await request(http).get('/solutions/1').expect(200)).body as SolutionBody;
    const like = (user: number) => request(http).post('/solutions/1/like').set('X-User-Id', String(user));

    // Four users like at once: four consecutive values, each once (G2).
    const likes = await Promise.all([1, 2, 3, 4].map((user) => like(user).expect(200)));
    const values = likes.map((response) => (response.body as LikeBody).like_count).sort((a, b) => a - b);
    expect(values).toEqual([1, 2, 3, 4].map((n) => before.likeCount + n));
    expect(likes.every((response) => (response.body as LikeBody).changed)).toBe(true);

    // A user who already likes it changes nothing, however many times at once.
    const again = await Promise.all([1, 1, 1].map((user) => like(user).expect(200)));
    for (const response of again) {
      expect(response.body).toEqual({
        id: 1,
        userId: 1,
        liked: true,
        changed: false,
        like_count: before.likeCount + 4,
      });
    }

    const unlike = () => request(http).delete('/solutions/1/like').set('X-User-Id', '2').expect(200);
    expect((await unlike()).body).toEqual({
      id: 1,
      userId: 2,
      liked: false,
      changed: true,
      like_count: before.likeCount + 3,
    });
    expect((await unlike()).body).toMatchObject({ changed: false, like_count: before.likeCount + 3 });
    expect((await request(http).get('/likes').set('X-User-Id', '2').expect(200)).body).toEqual({
      solution: [],
      comment: [],
    });
    expect((await request(http).get('/likes').set('X-User-Id', '1').expect(200)).body).toEqual({
      solution: [1],
      comment: [],
    });

    const after = (await request(http).get('/solutions/1').expect(200)).body as SolutionBody;
    expect(after).toMatchObject({ id: 1, likeCount: before.likeCount + 3, viewCount: before.viewCount + 1 });

    const problem = (await request(http).get('/problems/1').expect(200)).body as {
      submissionCount: number;
      passedCount: number;
    };
    const submitted = await request(http).post('/problems/1/submissions').send({ passed: true }).expect(201);
    expect(submitted.body).toEqual({
      problemId: 1,
      passed: true,
      submission_count: problem.submissionCount + 1,
      passed_count: problem.passedCount + 1,
    });

    await flushEverything(app.get(CounterService));
    expect((await request(http).get('/health/counters').expect(200)).body).toMatchObject({ pendingRows: 0 });
    const dataSource = app.get(DataSource);
    const [solution] = await dataSource.query('SELECT like_count, view_count FROM solutions WHERE id = 1');
    expect([Number(solution.like_count), Number(solution.view_count)]).toEqual([
      before.likeCount + 3,
      before.viewCount + 1,
    ]);
    const [likeRows] = await dataSource.query(
      "SELECT COUNT(*) AS n FROM likes WHERE target_type = 'solution' AND target_id = 1",
    );
    expect(Number(likeRows.n)).toBe(3);
    const [row] = await dataSource.query('SELECT submission_count, passed_count FROM problems WHERE id = 1');
    expect([Number(row.submission_count), Number(row.passed_count)]).toEqual([
      problem.submissionCount + 1,
      problem.passedCount + 1,
    ]);
  });

  it('absorbs a retried like, counts like → unlike → like, and keeps submissions as rows', async () => {
    const counters = app.get(CounterService);
    const dataSource = app.get(DataSource);
    const start = await counters.get(Solution, 2, 'like_count');
    const like = () => request(http).post('/solutions/2/like').set('X-User-Id', '3');

    // The count applied, its answer lost (as when Redis times out): 503, and the like's row stays.
    const change = counters.change.bind(counters);
    vi.spyOn(counters, 'change').mockImplementationOnce(async (...args) => {
      await change(...args);
      throw new CounterStoreUnavailableError('Redis did not answer in time; the change may have been applied.');
    });
    await like().expect(503);
    expect(await counters.get(Solution, 2, 'like_count')).toBe(start + 1);
    // The retry sends the same keyed change: absorbed.
    expect((await like().expect(200)).body).toMatchObject({ liked: true, changed: false, like_count: start + 1 });
    const unlike = await request(http).delete('/solutions/2/like').set('X-User-Id', '3').expect(200);
    expect(unlike.body).toMatchObject({ liked: false, changed: true, like_count: start });
    expect((await like().expect(200)).body).toMatchObject({ liked: true, changed: true, like_count: start + 1 });

    const problem = await counters.get(Problem, 3, 'submission_count');
    for (const passed of [true, false]) {
      await request(http).post('/problems/3/submissions').send({ passed }).expect(201);
    }
    expect(await counters.get(Problem, 3, 'submission_count')).toBe(problem + 2);
    const [rows] = await dataSource.query('SELECT COUNT(*) AS n FROM submissions WHERE problem_id = 3');
    expect(Number(rows.n)).toBe(2);
  });

  it('audits counts against their rows and recounts them (the admin routes)', async () => {
    const counters = app.get(CounterService);
    const dataSource = app.get(DataSource);
    // A like row whose count never happened (a crash between the insert and the increment).
    await dataSource.query("INSERT INTO likes (user_id, target_type, target_id) VALUES (4, 'comment', 3)");
    const live = await counters.get(Comment, 3, 'like_count');
    const [rows] = await dataSource.query(
      "SELECT COUNT(*) AS n FROM likes WHERE target_type = 'comment' AND target_id = 3",
    );
    const source = Number(rows.n);
    expect(source).not.toBe(live);

    const admin = { Authorization: `Bearer ${adminToken}` };
    const audit = await request(http).post('/admin/counters/comments/like_count/audit').set(admin).expect(201);
    expect(audit.body.drifted).toContainEqual({ id: 3, live, source });
    const sampled = await request(http)
      .post('/admin/counters/comments/like_count/audit')
      .set(admin)
      .send({ sample: 2 })
      .expect(201);
    expect(sampled.body.checked).toBe(2);
    const recount = await request(http)
      .post('/admin/counters/comments/like_count/recount')
      .set(admin)
      .send({ ids: [3] })
      .expect(201);
    expect(recount.body).toEqual({
      checked: 1,
      corrected: [{ id: 3, was: live, now: source }],
      skipped: [],
      refused: [],
      cursor: null,
    });
    await request(http).post('/admin/counters/nothing/like_count/audit').set(admin).expect(404);

    await flushEverything(counters);
    const [stored] = await dataSource.query('SELECT like_count FROM comments WHERE id = 3');
    expect(Number(stored.like_count)).toBe(source);
  });

  it('keeps the admin routes behind ADMIN_TOKEN, POST only, same-origin; without one configured they are 404', async () => {
    const counters = app.get(CounterService);
    const dataSource = app.get(DataSource);
    // A count that differs from its rows, which a recount would correct.
    await dataSource.query("INSERT INTO likes (user_id, target_type, target_id) VALUES (4, 'comment', 4)");
    const live = await counters.get(Comment, 4, 'like_count');
    const audit = '/admin/counters/comments/like_count/audit';
    const recount = '/admin/counters/comments/like_count/recount';
    const admin = { Authorization: `Bearer ${adminToken}` };
    const audits = vi.spyOn(counters, 'audit');
    const recounts = vi.spyOn(counters, 'recount');

    for (const authorization of [undefined, `Bearer ${adminToken}x`, `Bearer ${adminToken.slice(1)}`, adminToken]) {
      const headers = authorization === undefined ? {} : { Authorization: authorization };
      const refused = await request(http)
        .post(recount)
        .set(headers)
        .send({ ids: [4] })
        .expect(401);
      expect(refused.body.message).toBe('Admin routes need "Authorization: Bearer <ADMIN_TOKEN>".');
      await request(http).post(audit).set(headers).expect(401);
    }
    // Nothing that starts work answers a GET (a cross-site <img> sends one), and another site's page is refused.
    await request(http).get(audit).set(admin).expect(404);
    await request(http).get(`${audit}?sample=10`).set(admin).expect(404);
    const crossSite = { ...admin, Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' };
    await request(http)
      .post(recount)
      .set(crossSite)
      .send({ ids: [4] })
      .expect(403);
    await request(http).post(audit).set(crossSite).expect(403);

    // No token configured: the routes do not exist, whatever is sent.
    delete process.env.ADMIN_TOKEN;
    try {
      await request(http).post(audit).set(admin).expect(404);
      await request(http)
        .post(recount)
        .set(admin)
        .send({ ids: [4] })
        .expect(404);
      await request(http)
        .post(recount)
        .set({ Authorization: 'Bearer ' })
        .send({ ids: [4] })
        .expect(404);
    } finally {
      process.env.ADMIN_TOKEN = adminToken;
    }
    expect([audits.mock.calls.length, recounts.mock.calls.length]).toEqual([0, 0]);
    expect(await counters.get(Comment, 4, 'like_count')).toBe(live);
  });

  it('counts a comment like once per user, and refuses unknown users (401) and targets (404)', async () => {
    const created = await request(http)
      .post('/problems/1/solutions')
      .send({ title: 'Brute force', content: 'Try every pair.' })
      .expect(201);
    const solution = created.body as SolutionBody;
    expect(solution.likeCount).toBe(0);
    const path = `/solutions/${solution.id}/like`;

    // Unliking what one never liked changes nothing: no row, no decrement, no 409.
    expect((await request(http).delete(path).set('X-User-Id', '1').expect(200)).body).toMatchObject({
      changed: false,
      like_count: 0,
    });
    const sameUser = await Promise.all(
      Array.from({ length: 5 }, () => request(http).post(path).set('X-User-Id', '3').expect(200)),
    );
    expect(sameUser.filter((response) => (response.body as LikeBody).changed)).toHaveLength(1);

    const comment = (await request(http).post('/comments/1/like').set('X-User-Id', '4').expect(200)).body as LikeBody;
    expect(comment).toMatchObject({ id: 1, userId: 4, liked: true, changed: true });
    expect((await request(http).post('/comments/1/like').set('X-User-Id', '4').expect(200)).body).toEqual({
      ...comment,
      changed: false,
    });
    expect((await request(http).delete('/comments/1/like').set('X-User-Id', '4').expect(200)).body).toEqual({
      ...comment,
      liked: false,
      like_count: comment.like_count - 1,
    });

    await request(http).post(path).expect(401);
    await request(http).post(path).set('X-User-Id', 'ada').expect(401);
    await request(http).post(path).set('X-User-Id', '999').expect(401);
    await request(http).post('/solutions/999999/like').set('X-User-Id', '1').expect(404);
    await request(http).delete('/comments/999999/like').set('X-User-Id', '1').expect(404);
    const [orphans] = await app.get(DataSource).query('SELECT COUNT(*) AS n FROM likes WHERE target_id = 999999');
    expect(Number(orphans.n)).toBe(0);

    expect((await request(http).get(`/solutions/${solution.id}`).expect(200)).body).toMatchObject({
      likeCount: 1,
      viewCount: 1,
    });
  });

  it("refuses state-changing requests from another site's pages, and takes the app's own and curl's", async () => {
    const dataSource = app.get(DataSource);
    const likeRows = async () =>
      Number((await dataSource.query("SELECT COUNT(*) AS n FROM likes WHERE target_type = 'solution'"))[0].n);
    const commentRows = async () => Number((await dataSource.query('SELECT COUNT(*) AS n FROM comments'))[0].n);
    const [likesBefore, commentsBefore] = [await likeRows(), await commentRows()];
    const likesOf2 = async () => ((await request(http).get('/solutions/2').expect(200)).body as SolutionBody).likeCount;
    const countBefore = await likesOf2();

    // What a form on https://evil.example posting here sends: a browser adds Origin and Sec-Fetch-Site.
    const forged = await request(http)
      .post('/solutions/1/comments')
      .type('form')
      .set({ Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' })
      .send({ content: 'forged' })
      .expect(403);
    expect(forged.body.message).toMatch(/^Cross-site request refused \(Sec-Fetch-Site: cross-site\)/);
    await request(http).post('/solutions/2/like').set({ 'X-User-Id': '1', Origin: 'https://evil.example' }).expect(403);
    await request(http).post('/solutions/2/like').set({ 'X-User-Id': '1', Origin: 'null' }).expect(403);
    await request(http).post('/solutions/2/like').set({ 'X-User-Id': '1', 'Sec-Fetch-Site': 'same-site' }).expect(403);
    await request(http)
      .delete('/solutions/1/like')
      .set({ 'X-User-Id': '1', Origin: 'http://evil.example' })
      .expect(403);
    expect([await likeRows(), await commentRows(), await likesOf2()]).toEqual([
      likesBefore,
      commentsBefore,
      countBefore,
    ]);

    // The app's own page (same host in Origin, Sec-Fetch-Site same-origin) and curl (neither header) pass.
    await request(http)
      .post('/solutions/2/like')
      .set({ Host: 'judge.example:3000', Origin: 'http://judge.example:3000', 'Sec-Fetch-Site': 'same-origin' })
      .set('X-User-Id', '1')
      .expect(200);
    await request(http).post('/solutions/2/like').set('X-User-Id', '2').expect(200);
    expect(await likesOf2()).toBe(countBefore + 2);
  });

  it('gives views per hour over the last 24 hours, live, as the buckets reach SQL; 404 for a missing solution', async () => {
    const created = await request(http)
      .post('/problems/2/solutions')
      .send({ title: 'Two pointers', content: 'Walk from both ends.' })
      .expect(201);
    const id = (created.body as SolutionBody).id;
    const path = `/solutions/${id}/views/hourly`;
    await insideOneHour(10_000);
    const hour = hourOf(Date.now());
    /** The 24 hours ending with this one, as JSON gives them, with `views` in this hour. */
    const lastDay = (views: number) =>
      Array.from({ length: 24 }, (_, index) => ({
        start: new Date(hour - (23 - index) * HOUR_MS).toISOString(),
        value: index === 23 ? views : 0,
      }));

    expect((await request(http).get(path).expect(200)).body).toEqual(lastDay(0));
    for (let view = 0; view < 3; view++) await request(http).get(`/solutions/${id}`).expect(200);
    await request(http).post(`/solutions/${id}/like`).set('X-User-Id', '1').expect(200);
    // Live before the flush; reading them counts no view.
    expect((await request(http).get(path).expect(200)).body).toEqual(lastDay(3));
    expect((await request(http).get(path).expect(200)).body).toEqual(lastDay(3));

    await flushEverything(app.get(CounterService));
    expect((await request(http).get(path).expect(200)).body).toEqual(lastDay(3));
    const dataSource = app.get(DataSource);
    const buckets = await dataSource.getRepository(CounterBucket).find({
      where: { entity: dataSource.getMetadata(Solution).tablePath, rowId: String(id) },
      order: { counter: 'ASC', granularity: 'ASC' },
    });
    // Hours only: the days of both counters are made of them.
    expect(buckets.map((row) => [row.counter, row.granularity, Number(row.start) * 1_000, Number(row.value)])).toEqual([
      ['like_count', 'hour', hour, 1],
      ['view_count', 'hour', hour, 3],
    ]);

    const missing = await request(http).get('/solutions/999999/views/hourly').expect(404);
    expect(missing.body.message).toBe('Solution 999999 does not exist.');
    await request(http).get('/solutions/one/views/hourly').expect(400);
    const index = (await request(http).get('/').expect(200)).body as { routes: Record<string, string> };
    expect(Object.keys(index.routes)).toContain('GET /solutions/:id/views/hourly');
  });
});
