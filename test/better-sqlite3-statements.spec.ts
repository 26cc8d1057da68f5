import { QueryFailedError, type DataSourceOptions } from 'typeorm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startCounterApp, type CounterApp } from './support/counter-app.js';
import { createTestDatabase, type TestDatabase } from './support/databases.js';
import { Article } from './support/entities.js';
import { deleteKeys, testRedis, uniquePrefix } from './support/redis.js';
import { articleCounts, insertArticles } from './support/rows.js';

/** The flush's batch UPDATE on SQLite (see sqlite.ts). */
const BATCH_UPDATE = /^UPDATE .* FROM \(VALUES .*\) AS v WHERE /s;

// On better-sqlite3 the flush runs its batch UPDATEs on the driver's connection, without TypeORM's
// `query` (see better-sqlite3-statements.ts): what a user sees of that `query` must stay the same.
describe('the batch UPDATE on better-sqlite3, run without TypeORM query', () => {
  const redis = testRedis();
  const prefix = uniquePrefix('sqlite-direct');
  let database: TestDatabase;
  let counter: CounterApp;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    // Every statement that takes longer than 1 ms is reported as slow.
    counter = await startCounterApp({
      database: { ...database.options, maxQueryExecutionTime: 1 } as DataSourceOptions,
      keyPrefix: prefix,
    });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await counter.dataSource.query('DROP TRIGGER IF EXISTS test_article_update');
  });
  afterAll(async () => {
    await counter?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  it('reports each statement to the data source logger, as slow past maxQueryExecutionTime', async () => {
    const ids = await insertArticles(counter.dataSource, [5, 7]);
    // Makes the UPDATE take well over 1 ms: a count to 200,000 per updated row.
    await counter.dataSource.query(
      'CREATE TRIGGER test_article_update AFTER UPDATE ON test_article BEGIN ' +
        'SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) SELECT x FROM c); END',
    );
    const { logger } = counter.dataSource;
    const logged = vi.spyOn(logger, 'logQuery');
    const slow = vi.spyOn(logger, 'logQuerySlow').mockImplementation(() => undefined);
    await counter.counters.increment(Article, ids[0], 'like_count', 2);
    await counter.counters.increment(Article, ids[1], 'like_count', 3);

    const report = await counter.counters.flush();

    expect(report.error).toBeUndefined();
    expect(report.rows).toBe(2);
    const counts = await articleCounts(counter.dataSource, ids);
    expect(ids.map((id) => counts.get(id)!.likes)).toEqual([7, 10]);
    const updates = logged.mock.calls.filter(([sql]) => BATCH_UPDATE.test(sql));
    expect(updates).toHaveLength(1);
    // Each row's id and delta, in id order, then the padding rows (NULL) of the statement's fixed length.
    const params = updates[0][1] as unknown[];
    expect(params.slice(0, 6)).toEqual([ids[0], 2, ids[1], 3, null, null]);
    expect(params.slice(4).every((param) => param === null)).toBe(true);
    const slowUpdates = slow.mock.calls.filter(([, sql]) => BATCH_UPDATE.test(sql));
    expect(slowUpdates).toHaveLength(1);
    expect(slowUpdates[0][0]).toBeGreaterThan(1);
    expect(slowUpdates[0][2]).toBe(params);
  });

  it('fails the batch with a QueryFailedError around the driver error, logged, and writes it once the database takes it', async () => {
    const ids = await insertArticles(counter.dataSource, [11]);
    await counter.dataSource.query(
      "CREATE TRIGGER test_article_update BEFORE UPDATE ON test_article BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    );
    const failed = vi.spyOn(counter.dataSource.logger, 'logQueryError');
    await counter.counters.increment(Article, ids[0], 'like_count', 4);

    const refused = await counter.counters.flush();

    expect(refused.failedShards).toBe(1);
    expect(refused.rows).toBe(0);
    expect(refused.error).toBeInstanceOf(QueryFailedError);
    const driverError = (refused.error as QueryFailedError).driverError as { code?: string; message: string };
    expect(driverError.code).toBe('SQLITE_CONSTRAINT_TRIGGER');
    expect(driverError.message).toBe('refused by the test');
    expect(BATCH_UPDATE.test((refused.error as QueryFailedError).query)).toBe(true);
    const errors = failed.mock.calls.filter(([, sql]) => BATCH_UPDATE.test(sql));
    expect(errors).toHaveLength(1);
    expect(errors[0][0]).toBe(driverError);
    // Rolled back whole: no row written, no ledger entry.
    expect((await articleCounts(counter.dataSource, ids)).get(ids[0])!.likes).toBe(11);

    await counter.dataSource.query('DROP TRIGGER test_article_update');
    const written = await counter.counters.flush();

    expect(written.error).toBeUndefined();
    expect(written.rows).toBe(1);
    expect((await articleCounts(counter.dataSource, ids)).get(ids[0])!.likes).toBe(15);
    expect(await counter.counters.get(Article, ids[0], 'like_count')).toBe(15);
  });
});
