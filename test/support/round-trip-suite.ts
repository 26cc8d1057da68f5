import { afterAll, beforeAll } from 'vitest';
import type { CounterModuleOptions } from '../../lib/index.js';
import { startCounterApp, type CounterApp } from './counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, uniquePrefix, type AnyRedis } from '../../support/redis.js';
import { RoundTrips } from './redis-traffic.js';
import { inspectionClient, moduleClient, type Topology } from './topologies.js';

export interface RoundTripSuite {
  readonly prefix: string;
  /** The test's own client of the topology, for inspecting keys. */
  readonly redis: AnyRedis;
  /** The module's client: the test's, so that its traffic can be counted. */
  readonly client: AnyRedis;
  readonly counter: CounterApp;
  /** The module client's round trips (for keys under the prefix), from the app's start on. */
  readonly roundTrips: RoundTrips;
}

/**
 * An app on the first test database whose Redis client is the test's own, with its round trips
 * counted, for the enclosing `describe`; torn down after it. Read the fields inside tests (they are set
 * in beforeAll).
 */
export function useRoundTripSuite(
  topology: Topology,
  label: string,
  counter: CounterModuleOptions,
  controllers?: Array<new (...args: never[]) => unknown>,
): RoundTripSuite {
  const prefix = uniquePrefix(label);
  const redis = inspectionClient(topology);
  const client = moduleClient(topology);
  let database: TestDatabase | undefined;
  let app: CounterApp | undefined;
  let roundTrips: RoundTrips | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(DATABASES[0]);
    app = await startCounterApp({ database: database.options, keyPrefix: prefix, redis: client, counter, controllers });
    roundTrips = new RoundTrips(client, prefix);
  });
  afterAll(async () => {
    roundTrips?.stop();
    await app?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    client.disconnect();
    redis.disconnect();
  });
  return {
    prefix,
    redis,
    client,
    get counter() {
      return app!;
    },
    get roundTrips() {
      return roundTrips!;
    },
  };
}
