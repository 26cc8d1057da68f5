import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import request from 'supertest';
import type { App } from 'supertest/types.js';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterService } from '../../lib/index.js';
import { createTestDatabase, DATABASES, type DatabaseName } from '../support/databases.js';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../support/redis.js';

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

/**
 * Flushes until nothing waits in Redis. The app's scheduled flush (every second) may hold some shards'
 * leases when a call comes, and that call then skips them.
 */
async function flushEverything(counters: CounterService): Promise<void> {
  for (let call = 0; call < 50; call++) {
    const report = await counters.flush();
    expect(report.error).toBeUndefined();
    if ((await counters.status()).pendingRows === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('rows still pending after 50 flushes');
}

interface SolutionBody {
  id: number;
  likeCount: number;
  viewCount: number;
}

// The sample app the README's first command starts, end to end over HTTP: its routes answer with live
// counts, likes are exact under concurrency, an unlike below zero is refused, and the database gets
// every change once flushed.
describe.each(DATABASES)('the sample app on %s', (databaseName) => {
  const prefix = uniquePrefix('sample');
  const redis = testRedis();
  const environment = { DATABASE_URL: '', REDIS_URL, COUNTER_KEY_PREFIX: prefix };
  const saved = new Map(Object.keys(environment).map((key) => [key, process.env[key]]));
  let database: SampleDatabase;
  let app: INestApplication;
  let http: App;

  beforeAll(async () => {
    database = await sampleDatabase(databaseName);
    Object.assign(process.env, { ...environment, DATABASE_URL: database.url });
    const { AppModule } = await import('../../sample-app/src/app.module.js');
    app = await NestFactory.create(AppModule, { logger: ['error'], abortOnError: false });
    await app.init();
    http = app.getHttpServer() as App;
  });

  afterAll(async () => {
    await app?.close();
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    await deleteKeys(redis, prefix);
    redis.disconnect();
    await database?.drop();
  });

  it('runs on the database DATABASE_URL names, and lists its routes at /', async () => {
    const { type } = app.get(DataSource).options;
    expect(type).toBe({ postgres: 'postgres', mariadb: 'mariadb', sqlite: 'better-sqlite3' }[databaseName]);
    const response = await request(http).get('/').expect(200);
    expect(Object.keys(response.body.routes)).toContain('POST /solutions/:id/like');
    expect(Object.keys(response.body.routes)).toContain('GET /health/counters');
  });

  it('counts likes, unlikes, views and submissions exactly, and flushes them into the database', async () => {
    const before = (await request(http).get('/solutions/1').expect(200)).body as SolutionBody;

    // Five concurrent likes resolve with five consecutive values, each once (G2).
    const likes = await Promise.all(
      Array.from({ length: 5 }, () => request(http).post('/solutions/1/like').expect(200)),
    );
    const values = likes.map((response) => (response.body as { like_count: number }).like_count).sort((a, b) => a - b);
    expect(values).toEqual([1, 2, 3, 4, 5].map((n) => before.likeCount + n));
    expect((await request(http).delete('/solutions/1/like').expect(200)).body).toEqual({
      id: 1,
      like_count: before.likeCount + 4,
    });

    const after = (await request(http).get('/solutions/1').expect(200)).body as SolutionBody;
    expect(after).toMatchObject({ id: 1, likeCount: before.likeCount + 4, viewCount: before.viewCount + 1 });

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
      before.likeCount + 4,
      before.viewCount + 1,
    ]);
    const [row] = await dataSource.query('SELECT submission_count, passed_count FROM problems WHERE id = 1');
    expect([Number(row.submission_count), Number(row.passed_count)]).toEqual([
      problem.submissionCount + 1,
      problem.passedCount + 1,
    ]);
  });

  it('refuses an unlike below zero with 409, and an unknown solution with 404', async () => {
    const created = await request(http)
      .post('/problems/1/solutions')
      .send({ title: 'Brute force', content: 'Try every pair.' })
      .expect(201);
    const solution = created.body as SolutionBody;
    expect(solution.likeCount).toBe(0);
    await request(http).delete(`/solutions/${solution.id}/like`).expect(409);
    await request(http).post('/solutions/999999/like').expect(404);
    expect((await request(http).get(`/solutions/${solution.id}`).expect(200)).body).toMatchObject({
      likeCount: 0,
      viewCount: 1,
    });
  });
});
