import { afterAll, beforeAll } from 'vitest';
import { CounterKeys, type ShardKeys } from '../../lib/redis/counter.keys.js';
import { Article } from '../fixtures/entities.js';
import { tapCommands, type SentCommand } from '../../support/command-tap.js';
import { startCounterApp, type CounterApp } from './counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, uniquePrefix, type AnyRedis } from '../../support/redis.js';
import { scriptArguments, scriptOf, scriptsBySha } from './script-calls.js';
import { inspectionClient, moduleClient, type Topology } from './topologies.js';

const SHARDS = 64;

/** One call of the increment script, with the number of changes it carries. */
export interface IncrementCall {
  script: string;
  keys: string[];
  changes: number;
  command: SentCommand;
}

export interface IncrementSuite {
  /** The test's own client of the topology, for inspecting keys. */
  readonly redis: AnyRedis;
  readonly counter: CounterApp;
  /** A mark for `incrementCalls`: how many commands the module's client has sent so far. */
  sentSoFar(): number;
  /** The increment script calls the module's client sent since the mark `from`. */
  incrementCalls(from: number): IncrementCall[];
  /** Inserts an article titled 'batched' with these counts. */
  save(likeCount: number, viewCount: number): Promise<Article>;
  shardOf(id: number): ShardKeys;
  rowKeyOf(id: number): string;
}

/**
 * An app on the first test database whose Redis client is the test's own, every command it sends
 * recorded, for the enclosing `describe`; torn down after it. Call the functions inside tests.
 */
export function useIncrementSuite(topology: Topology, label: string): IncrementSuite {
  const prefix = uniquePrefix(label);
  const redis = inspectionClient(topology);
  const client = moduleClient(topology);
  const keys = new CounterKeys(prefix, SHARDS);
  const scripts = scriptsBySha();
  const sent: SentCommand[] = [];
  let database: TestDatabase | undefined;
  let counter: CounterApp | undefined;
  let untap: (() => void) | undefined;

  beforeAll(async () => {
    database = await createTestDatabase(DATABASES[0]);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      redis: client,
      counter: { shards: SHARDS },
    });
    untap = tapCommands(client, (command) => sent.push(command));
  });

  afterAll(async () => {
    untap?.();
    await counter?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    client.disconnect();
    redis.disconnect();
  });

  const shardOf = (id: number) =>
    keys.shard(counter!.dataSource.getMetadata(Article).tablePath, keys.shardOf(String(id)));
  return {
    redis,
    get counter() {
      return counter!;
    },
    sentSoFar: () => sent.length,
    incrementCalls: (from) =>
      sent.slice(from).flatMap((command) => {
        const script = scriptOf(command, scripts);
        if (script !== 'nestjsCounterIncrement') return [];
        const { keys: declared, argv } = scriptArguments(command);
        let changes = 0;
        // argv[0] is the row TTL; then per row its id, its number of changes and 4 values per change, or
        // for a row with a keyed change minus that number, the keys' lifetime and 5 values per change.
        for (let at = 1; at < argv.length;) {
          const n = Number(argv[at + 1]);
          changes += Math.abs(n);
          at += n < 0 ? 3 - 5 * n : 2 + 4 * n;
        }
        return [{ script, keys: declared, changes, command }];
      }),
    save: (likeCount, viewCount) =>
      counter!.dataSource.getRepository(Article).save({ title: 'batched', likeCount, viewCount }),
    shardOf,
    rowKeyOf: (id) => shardOf(id).row(String(id)),
  };
}

/**
 * Eight changes to two seeded rows in one turn of the event loop, two of them refused by their bounds
 * (`first` at 0 likes with `min: 0`): the mix the batching specs send.
 */
export function mixedTurn(
  counter: CounterApp,
  first: Article,
  second: Article,
): Promise<PromiseSettledResult<number>[]> {
  const { counters } = counter;
  return Promise.allSettled([
    counters.decrement(Article, first.id, 'like_count'), // 0 - 1 < min 0: refused
    counters.increment(Article, first.id, 'like_count', 2),
    counters.increment(Article, second.id, 'view_count', 5),
    counters.decrement(Article, first.id, 'like_count'),
    counters.increment(Article, first.id, 'view_count', 4),
    counters.decrement(Article, second.id, 'like_count', 3),
    counters.decrement(Article, first.id, 'like_count', 5), // 1 - 5 < min 0: refused
    counters.increment(Article, first.id, 'like_count', 0),
  ]);
}
