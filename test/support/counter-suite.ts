import { afterAll, beforeAll } from 'vitest';
import type { CounterModuleOptions } from '../../lib/index.js';
import { startCounterApp, type CounterApp } from './counter-app.js';
import { createTestDatabase, type DatabaseName, type TestDatabase } from './databases.js';
import { deleteKeys, testRedis, uniquePrefix } from './redis.js';

export interface CounterSuite {
  readonly redis: ReturnType<typeof testRedis>;
  readonly prefix: string;
  readonly database: TestDatabase;
  /** The app instances, sharing the database and the key prefix. */
  readonly apps: CounterApp[];
  /** The first instance. */
  readonly counter: CounterApp;
}

/**
 * `instances` apps (as separate app instances of one deployment) on a database and key prefix of their
 * own for the enclosing `describe`, torn down after it: apps closed, database dropped, keys deleted.
 * Read the fields inside tests (they are set in beforeAll).
 */
export function useCounterSuite(
  databaseName: DatabaseName,
  label: string,
  counter?: CounterModuleOptions,
  instances = 1,
): CounterSuite {
  const redis = testRedis();
  const prefix = uniquePrefix(label);
  const apps: CounterApp[] = [];
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    for (let i = 0; i < instances; i++) {
      apps.push(await startCounterApp({ database: database.options, keyPrefix: prefix, synchronize: i === 0, counter }));
    }
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });
  return {
    redis,
    prefix,
    apps,
    get database() {
      return database!;
    },
    get counter() {
      return apps[0];
    },
  };
}
