import { afterAll, beforeAll } from 'vitest';
import { startCounterApp, type CounterApp, type CounterAppOptions } from './counter-app.js';
import { createTestDatabase, type DatabaseName, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, testRedis, uniquePrefix } from '../../support/redis.js';

export interface CounterApps {
  /**
   * Starts an app on the group's database with a key prefix of its own (the first app creates the
   * tables); closed after the spec unless the test closes it first.
   */
  start(options?: Omit<CounterAppOptions, 'database' | 'keyPrefix'>): Promise<CounterApp & { keyPrefix: string }>;
}

/** The apps of one spec, on one database of their own: everything they made is removed after the spec. */
export function useCounterApps(label: string, databaseName: DatabaseName = 'sqlite'): CounterApps {
  const redis = testRedis();
  const prefixes: string[] = [];
  const apps: CounterApp[] = [];
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
  });

  afterAll(async () => {
    for (const app of apps) await app.close().catch(() => undefined);
    await database?.drop();
    for (const prefix of prefixes) await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  return {
    async start(options = {}) {
      const keyPrefix = uniquePrefix(label);
      prefixes.push(keyPrefix);
      const app = await startCounterApp({
        database: database.options,
        keyPrefix,
        synchronize: apps.length === 0,
        ...options,
      });
      apps.push(app);
      return { ...app, keyPrefix };
    },
  };
}
