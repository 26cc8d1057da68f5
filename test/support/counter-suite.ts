import { afterAll, beforeAll } from 'vitest';
import type { CounterModuleOptions } from '../../lib/index.js';
import { startCounterApp, type CounterApp } from './counter-app.js';
import { createTestDatabase, type DatabaseName, type TestDatabase } from './databases.js';
import { deleteKeys, testRedis, uniquePrefix } from './redis.js';

export interface CounterSuite {
  readonly redis: ReturnType<typeof testRedis>;
  readonly prefix: string;
  readonly database: TestDatabase;
  readonly counter: CounterApp;
}

/**
 * One app on a database and key prefix of its own for the enclosing `describe`, torn down after it:
 * its database dropped, its keys deleted. Read the fields inside tests (they are set in beforeAll).
 */
export function useCounterSuite(databaseName: DatabaseName, label: string, counter?: CounterModuleOptions): CounterSuite {
  const suite = { redis: testRedis(), prefix: uniquePrefix(label) } as {
    redis: ReturnType<typeof testRedis>;
    prefix: string;
    database: TestDatabase;
    counter: CounterApp;
  };
  beforeAll(async () => {
    suite.database = await createTestDatabase(databaseName);
    suite.counter = await startCounterApp({ database: suite.database.options, keyPrefix: suite.prefix, counter });
  });
  afterAll(async () => {
    await suite.counter?.close();
    await suite.database?.drop();
    await deleteKeys(suite.redis, suite.prefix);
    suite.redis.disconnect();
  });
  return suite;
}
