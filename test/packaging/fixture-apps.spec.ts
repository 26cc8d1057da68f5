import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../../support/redis.js';
import {
  copyFixture,
  installedVersion,
  npm,
  packTarball,
  removeDirectory,
  startApp,
  type RunningApp,
} from './fixture-app.js';

const POSTGRES = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
const DATABASE_URL = `postgres://${POSTGRES.user}@${POSTGRES.host}:${POSTGRES.port}/${POSTGRES.database}`;

let packDirectory: string;
let tarball: string;

beforeAll(async () => {
  packDirectory = mkdtempSync(join(tmpdir(), 'nestjs-counter-pack-'));
  tarball = await packTarball(packDirectory);
});
afterAll(() => removeDirectory(packDirectory));

/**
 * The stacks a user installs the tarball into. The CommonJS app is what `nest new` made before Nest 12
 * (TypeScript 5.7, no require(esm) in its type check) on the oldest stack the peer ranges accept; the
 * ESM app is the newest stack, ioredis 6 included.
 */
const FIXTURES = [
  { name: 'cjs-app', stack: { '@nestjs/core': /^11\./, typeorm: /^0\.3\./, ioredis: /^5\./, typescript: /^5\.7\./ } },
  { name: 'esm-app', stack: { '@nestjs/core': /^12\./, typeorm: /^1\./, ioredis: /^6\./, typescript: /^5\.9\./ } },
] as const;

describe.each(FIXTURES)('the $name fixture app, installed from the packed tarball', ({ name, stack }) => {
  let directory: string;
  let app: RunningApp;
  let database: pg.Client;
  const schema = uniquePrefix(name).replaceAll('-', '_');
  const keyPrefix = uniquePrefix(name);

  beforeAll(async () => {
    directory = copyFixture(name);
    await npm(directory, ['install', tarball]);
    await npm(directory, ['run', 'build']);
    database = new pg.Client(POSTGRES);
    await database.connect();
    await database.query(`CREATE SCHEMA "${schema}"`);
    app = await startApp(directory, {
      DATABASE_URL,
      DATABASE_SCHEMA: schema,
      REDIS_URL,
      KEY_PREFIX: keyPrefix,
    });
  });

  afterAll(async () => {
    await app?.stop();
    await database?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await database?.end();
    if (directory) removeDirectory(directory);
    const redis = testRedis();
    await deleteKeys(redis, keyPrefix);
    redis.disconnect();
  });

  it('runs on the stack it declares', () => {
    for (const [pkg, version] of Object.entries(stack)) expect(installedVersion(directory, pkg)).toMatch(version);
  });

  it('counts, reads live values and flushes them into PostgreSQL', async () => {
    const { id } = await call<{ id: number }>('POST', '/articles', { title: 'hello' });

    const values = await Promise.all(
      Array.from({ length: 20 }, () => call<{ likeCount: number }>('POST', `/articles/${id}/like`)),
    );
    expect(values.map((value) => value.likeCount).sort((a, b) => a - b)).toEqual(range(1, 20));
    expect(await call('DELETE', `/articles/${id}/like`)).toEqual({ likeCount: 19 });

    expect(await call('GET', `/articles/${id}`)).toEqual({ id, title: 'hello', likeCount: 19 });
    expect(await storedLikes(id)).toBe(0);

    const report = await call<{ rows: number }>('POST', '/articles/flush');
    expect(report.rows).toBe(1);
    expect(await storedLikes(id)).toBe(19);
  });

  it("answers the library's errors with their HTTP statuses", async () => {
    const { id } = await call<{ id: number }>('POST', '/articles', { title: 'bounds' });
    expect(await status('POST', '/articles/abc/like')).toBe(400);
    expect(await status('POST', '/articles/99999999999/like')).toBe(400);
    expect(await status('POST', '/articles/424242/like')).toBe(404);
    expect(await status('DELETE', `/articles/${id}/like`)).toBe(409);
  });

  async function call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await request(method, path, body);
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  async function status(method: string, path: string): Promise<number> {
    return (await request(method, path)).status;
  }

  function request(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(app.url + path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async function storedLikes(id: number): Promise<number> {
    const { rows } = await database.query<{ like_count: number }>(
      `SELECT "likeCount" AS like_count FROM "${schema}"."article" WHERE id = $1`,
      [id],
    );
    return rows[0].like_count;
  }
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, index) => from + index);
}
