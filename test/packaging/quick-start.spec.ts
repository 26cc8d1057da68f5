import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../../support/redis.js';
import { packTarball, removeDirectory } from './fixture-app.js';
import { buildApp, makeQuickStartApp, QuickStartDocs, startBuiltApp, type StartedApp } from './quick-start-app.js';

const POSTGRES = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
/** The app's tables go to a schema of this run: the quick start's code names none, the URL's search_path does. */
const schema = uniquePrefix('quick-start').replaceAll('-', '_');
const DATABASE_URL =
  `postgres://${POSTGRES.user}@${POSTGRES.host}:${POSTGRES.port}/${POSTGRES.database}` +
  `?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
const keyPrefix = uniquePrefix('quick-start');

/** The scheduled flush runs every second; a flush lands well within this. */
const FLUSH_WAIT_MS = 10_000;

/**
 * The README's install commands and quick start, and docs/OPERATING.md's health files, put into a
 * `nest new` app as a user would copy them, built with the app's TypeScript and run against PostgreSQL and
 * Redis: the docs cannot drift from code that compiles and works.
 */
describe("the README's quick start, copied into a new Nest app", () => {
  let workspace: string;
  let directory: string;
  let app: StartedApp;
  let database: pg.Client;

  beforeAll(async () => {
    workspace = mkdtempSync(join(tmpdir(), 'nestjs-counter-quick-start-pack-'));
    const tarball = await packTarball(workspace);
    directory = await makeQuickStartApp(new QuickStartDocs(), tarball);
    await buildApp(directory);
    database = new pg.Client(POSTGRES);
    await database.connect();
    await database.query(`CREATE SCHEMA "${schema}"`);
    app = await startBuiltApp(directory, { DATABASE_URL, REDIS_URL, COUNTER_KEY_PREFIX: keyPrefix });
    const { rows } = await database.query<{ id: number }>(
      `INSERT INTO "${schema}"."solution" SELECT FROM generate_series(1, 3) RETURNING id`,
    );
    expect(rows.map((row) => row.id)).toEqual([1, 2, 3]);
  });

  afterAll(async () => {
    await app?.stop();
    await database?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await database?.end();
    if (directory) removeDirectory(directory);
    if (workspace) removeDirectory(workspace);
    const redis = testRedis();
    await deleteKeys(redis, keyPrefix);
    redis.disconnect();
  });

  it('answers a like with JSON holding the new value', async () => {
    const first = await fetch(`${app.url}/solutions/1/like`, { method: 'POST' });
    expect(first.status).toBe(201);
    expect(first.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await first.json()).toEqual({ likes: 1 });

    const more = await Promise.all(Array.from({ length: 9 }, () => post('/solutions/1/like')));
    expect(more.map((body) => body.likes).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await post('/solutions/2/like')).toEqual({ likes: 1 });
  });

  it('lists the solutions with their live values', async () => {
    expect(await get('/solutions')).toEqual([
      { id: 1, likeCount: 10 },
      { id: 2, likeCount: 1 },
      { id: 3, likeCount: 0 },
    ]);
  });

  it("answers a bad id and a missing row with the filter's statuses", async () => {
    const bad = await fetch(`${app.url}/solutions/abc/like`, { method: 'POST' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ statusCode: 400, code: 'InvalidCounterIdError' });
    const missing = await fetch(`${app.url}/solutions/4/like`, { method: 'POST' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ statusCode: 404, code: 'CounterRowNotFoundError' });
  });

  it('flushes the likes into PostgreSQL on its schedule', async () => {
    const expected = { 1: 10, 2: 1, 3: 0 };
    const deadline = Date.now() + FLUSH_WAIT_MS;
    while (JSON.stringify(await storedLikes()) !== JSON.stringify(expected) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(await storedLikes()).toEqual(expected);
  });

  it('answers its health check, with nothing left to flush', async () => {
    const response = await fetch(`${app.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: 'ok',
      info: {
        counters: {
          status: 'up',
          redisAvailable: true,
          pendingRows: 0,
          inFlightBatches: 0,
          consecutiveFailedFlushes: 0,
          lastFlushError: null,
        },
      },
    });
  });

  it('holds every like in PostgreSQL once stopped with SIGTERM', async () => {
    expect(await post('/solutions/2/like')).toEqual({ likes: 2 });
    await app.stop();
    expect(await storedLikes()).toEqual({ 1: 10, 2: 2, 3: 0 });
  });

  async function post(path: string): Promise<{ likes: number }> {
    const response = await fetch(app.url + path, { method: 'POST' });
    if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { likes: number };
  }

  async function get(path: string): Promise<unknown> {
    const response = await fetch(app.url + path);
    if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  }

  async function storedLikes(): Promise<Record<number, number>> {
    const { rows } = await database.query<{ id: number; like_count: number }>(
      `SELECT id, "likeCount" AS like_count FROM "${schema}"."solution" ORDER BY id`,
    );
    return Object.fromEntries(rows.map((row) => [row.id, row.like_count]));
  }
});
