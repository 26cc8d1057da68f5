import { afterAll, beforeAll } from 'vitest';
import type { CounterModuleOptions } from '../../lib/index.js';
import { startCounterApp, type CounterApp } from './counter-app.js';
import { createTestDatabase, type DatabaseName, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, uniquePrefix, type AnyRedis } from '../../support/redis.js';
import { inspectionClient, type SuiteTarget } from './topologies.js';

export interface CounterSuite {
  /** The test's own client of the suite's topology, for inspecting keys. */
  readonly redis: AnyRedis;
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
 * `target` is a database (on the single Redis) or a database and a Redis topology; `entities` replace
 * the usual ones.
 * Read the fields inside tests (they are set in beforeAll).
 */
export function useCounterSuite(
  target: DatabaseName | SuiteTarget,
  label: string,
  counter?: CounterModuleOptions,
  instances = 1,
  entities?: Array<new () => unknown>,
): CounterSuite {
  const { database: databaseName, topology }: SuiteTarget =
    typeof target === 'string' ? { database: target, topology: 'standalone' } : target;
  const redis = inspectionClient(topology);
  const prefix = uniquePrefix(label);
  const apps: CounterApp[] = [];
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    for (let i = 0; i < instances; i++) {
      apps.push(
        await startCounterApp({
          database: database.options,
          keyPrefix: prefix,
          synchronize: i === 0,
          topology,
          counter,
          entities,
        }),
      );
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
