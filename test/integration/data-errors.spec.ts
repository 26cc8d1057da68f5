import type { INestApplication } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { CounterLedgerEntry, CounterModule, InvalidCounterIdError } from '../../lib/index.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { dialectFor } from '../../lib/sql/dialect-for.js';
import { Article, ENTITIES } from '../fixtures/entities.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { NestHarness } from '../support/nest-harness.js';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../../support/redis.js';

/** A statement each server refuses for its values (SQLSTATE class 22, or SQLite's mismatch). */
const DATA_ERRORS = {
  postgres: `SELECT '99999999999'::int`,
  mariadb: `INSERT INTO test_article (like_count) VALUES (99999999999)`,
  sqlite: `INSERT INTO test_article (id) VALUES ('abc')`,
};

// A driver error caused by the values sent is the caller's error, never reported as the database
// being unavailable (which invites retries and pages someone).
describe.each(DATABASES)('data errors on %s', (databaseName) => {
  const harness = new NestHarness();
  const prefix = uniquePrefix('data-errors');
  const redis = testRedis();
  let database: TestDatabase;
  let app: INestApplication;
  let dataSource: DataSource;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    app = await harness.start({
      database: database.options,
      entities: [...ENTITIES, CounterLedgerEntry],
      imports: [CounterModule.forRoot({ redis: REDIS_URL, keyPrefix: prefix, flushEnabled: false })],
    });
    dataSource = app.get(DataSource);
  });

  afterAll(async () => {
    await harness.closeAll();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  const failureOf = (sql: string) =>
    dataSource.query(sql).then(
      () => undefined,
      (error: unknown) => error,
    );

  it("tells the server's data exceptions from other failures", async () => {
    const dialect = dialectFor(dataSource);
    const dataError = await failureOf(DATA_ERRORS[databaseName]);
    expect(dataError).toBeInstanceOf(Error);
    expect(dialect.isDataError(dataError)).toBe(true);
    const syntaxError = await failureOf('SELEKT 1');
    expect(syntaxError).toBeInstanceOf(Error);
    expect(dialect.isDataError(syntaxError)).toBe(false);
  });

  // Only PostgreSQL refuses an id out of its column's range in a WHERE clause; the others compare it.
  if (databaseName === 'postgres') {
    it('reports ids PostgreSQL refuses as InvalidCounterIdError, not as an outage', async () => {
      // Past the id check (which refuses this id first): what a type the check does not know would meet.
      const entity = app.get(CounterRegistry).get(Article);
      const failure = await app
        .get(CounterDatabase)
        .readCounters(entity, ['99999999999'])
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(InvalidCounterIdError);
      expect((failure as Error).message).toBe(
        'The database refused the Article ids asked for (value "99999999999" is out of range for type integer): ' +
          'the ids do not fit its primary column.',
      );
      expect(((failure as Error).cause as { driverError: { code: string } }).driverError.code).toBe('22003');
    });
  }
});
