import type { DataSource } from 'typeorm';
import { afterAll, afterEach, beforeAll, vi } from 'vitest';
import { createTestDatabase, type DatabaseName, type TestDatabase } from '../../support/databases.js';
import { openObserver } from '../../support/observer.js';
import { deleteKeys, testRedis } from '../../support/redis.js';

export interface FaultSuite {
  /** The test's own client of the shared Redis, for the keys of `prefixes`. */
  readonly redis: ReturnType<typeof testRedis>;
  /** Key prefixes the tests used: their keys are deleted after the describe. */
  readonly prefixes: string[];
  /** Run in reverse order in afterAll, each whatever happened to the others (apps, proxies, servers). */
  readonly teardown: Array<() => unknown>;
  readonly database: TestDatabase;
  /** A direct connection of the test's own, for rows and the values the database really holds. */
  readonly observer: DataSource;
}

/**
 * For a describe whose tests inject faults: a database of its own and an observer connection, and, after
 * it, every teardown step run whatever failed, the database dropped and the prefixes' keys deleted.
 * Read `database` and `observer` inside tests or hooks (they are set in beforeAll).
 */
export function useFaultSuite(databaseName: DatabaseName): FaultSuite {
  const redis = testRedis();
  const prefixes: string[] = [];
  const teardown: Array<() => unknown> = [];
  let database: TestDatabase | undefined;
  let observer: DataSource | undefined;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    observer = await openObserver(database);
  });

  afterEach(() => vi.restoreAllMocks());

  afterAll(async () => {
    for (const step of teardown.reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => undefined);
    if (observer?.isInitialized) await observer.destroy();
    await database?.drop();
    for (const prefix of prefixes) await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  return {
    redis,
    prefixes,
    teardown,
    get database() {
      return database!;
    },
    get observer() {
      return observer!;
    },
  };
}
