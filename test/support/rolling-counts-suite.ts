import request from 'supertest';
import type { App } from 'supertest/types.js';
import { afterAll, beforeAll, expect } from 'vitest';
import { createTestDatabase, type DatabaseName, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, uniquePrefix, type AnyRedis } from '../../support/redis.js';
import { ROLLING_COUNT_ENTITIES, Story } from '../fixtures/rolling-count-entities.js';
import { RollingCountsController } from '../fixtures/rolling-counts.controller.js';
import { startCounterApp, type CounterApp } from './counter-app.js';
import { inspectionClient, type Topology } from './topologies.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
export const SHARDS = 4;

/**
 * Hours kept a day longer than the week counted: `count` refuses a window whose first hour starts before
 * the oldest hour kept, which a 7-day window not starting on the hour does with hours kept 7 days.
 */
export const ROLLING_COUNT_OPTIONS = { shards: SHARDS, bucketRetentionMs: { hour: 8 * DAY_MS } };

/** A story as the routes send it: its rolling counts, when overlaid. */
export interface StoryBody {
  id: number;
  viewsToday?: number;
  viewsThisWeek?: number;
}

export interface ClipBody {
  id: string;
  playsLately?: number;
}

/** A story's id and rolling counts, as the tests compare them. */
export const windows = ({ id, viewsToday, viewsThisWeek }: StoryBody) => ({ id, viewsToday, viewsThisWeek });

/** Another app of the suite: on the suite's database unless given one, with a client and key prefix of its own. */
export interface OtherAppOptions {
  database?: TestDatabase;
  /** The client the module uses; else the module connects to the suite's topology itself. */
  redis?: AnyRedis;
  /** Create the tables: for an app on a database of its own. @default false */
  synchronize?: boolean;
}

/**
 * An app serving RollingCountsController on a database and key prefix of its own for the enclosing
 * `describe`, and helpers over it; everything it and `startOther` made is torn down after it.
 */
export function useRollingCountsSuite(databaseName: DatabaseName, topology: Topology, label: string) {
  const prefix = uniquePrefix(label);
  const redis = inspectionClient(topology);
  let database: TestDatabase;
  let counter: CounterApp;
  const others: CounterApp[] = [];
  const otherClients: AnyRedis[] = [];
  const otherPrefixes: string[] = [];
  const otherDatabases: TestDatabase[] = [];
  let nextId = 1;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      topology,
      counter: ROLLING_COUNT_OPTIONS,
      entities: ROLLING_COUNT_ENTITIES,
      controllers: [RollingCountsController],
    });
  });

  afterAll(async () => {
    for (const other of others) await other.close();
    await counter?.close();
    await database?.drop();
    for (const other of otherDatabases) await other.drop();
    for (const keyPrefix of [prefix, ...otherPrefixes]) await deleteKeys(redis, keyPrefix);
    for (const client of otherClients) client.disconnect();
    redis.disconnect();
  });

  const counters = () => counter.counters;
  return {
    redis,
    get counter() {
      return counter;
    },
    counters,
    /** A number no other test of the suite has used, for ids and titles. */
    unique: () => nextId++,
    /** Inserts `count` stories (with `title`), returns their ids. */
    async newStories(count: number, title = ''): Promise<number[]> {
      const ids = Array.from({ length: count }, () => nextId++);
      await counter.dataSource.getRepository(Story).insert(ids.map((id) => ({ id, title })));
      return ids;
    },
    get: (path: string, app: CounterApp = counter) =>
      request(app.app.getHttpServer() as App)
        .get(path)
        .expect('Content-Type', /json/)
        .expect(200),
    flush: async () => expect((await counters().flush()).error).toBeUndefined(),
    /** What `count` gives over the stories' two windows. */
    counted: async (id: number) => ({
      id,
      viewsToday: await counters().count(Story, id, 'view_count', { since: Date.now() - DAY_MS }),
      viewsThisWeek: await counters().count(Story, id, 'view_count', { since: Date.now() - 7 * DAY_MS }),
    }),
    /** A database of the test's own, dropped after the suite. */
    async newDatabase(): Promise<TestDatabase> {
      const own = await createTestDatabase(databaseName);
      otherDatabases.push(own);
      return own;
    },
    /** Another app serving the same routes, with a key prefix of its own (`keyPrefix`). */
    async startOther(options: OtherAppOptions): Promise<CounterApp & { keyPrefix: string }> {
      const keyPrefix = uniquePrefix(`${label}-other`);
      otherPrefixes.push(keyPrefix);
      if (options.redis) otherClients.push(options.redis);
      const app = await startCounterApp({
        database: (options.database ?? database).options,
        keyPrefix,
        redis: options.redis,
        topology,
        synchronize: options.synchronize ?? false,
        counter: { ...ROLLING_COUNT_OPTIONS, flushOnShutdown: false },
        entities: ROLLING_COUNT_ENTITIES,
        controllers: [RollingCountsController],
      });
      others.push(app);
      return Object.assign(app, { keyPrefix });
    },
  };
}
