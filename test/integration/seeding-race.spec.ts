import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterSeedContentionError } from '../../lib/index.js';
import { groupBy } from '../../lib/collections.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import type { CounterApp } from '../support/counter-app.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { Article } from '../fixtures/entities.js';
import { articleCounts, insertArticles } from '../../support/rows.js';
import { seededRandom, testSeed } from '../../support/seeded-random.js';
import { TARGETS } from '../support/topologies.js';

const SHARDS = 4;
/** Callers loading rows at once in the contention test. */
const LOADERS = 8;
/**
 * Share of the loads' database reads that last until the next flush of their shard, so that most attempts
 * meet contention: 20 immediate attempts of ~200 loads all fail for about 8 of them (0.85^20 ≈ 4 %), a
 * retry that goes on for seconds (hundreds of attempts) for none.
 */
const SLOW_READS = 0.85;
/** A slow read never waits longer than this for a flush, so the test cannot hang on one. */
const SLOW_READ_LIMIT_MS = 1_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise and the function that resolves it. */
function signal() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

// Seeding a row from the database while a flush moves its values must never count a batch twice or
// miss one.
describe.each(TARGETS)('seeding racing a flush on %s, %s', (database, topology) => {
  const suite = useCounterSuite(
    { database, topology },
    'seed',
    { shards: SHARDS, cleanRowTtlSeconds: 1, flushOnShutdown: false, flushLeaseMs: 500 },
    2,
  );
  const { redis, prefix } = suite;
  const keys = new CounterKeys(prefix, SHARDS);
  let reader: CounterApp;
  let writer: CounterApp;
  beforeAll(() => void ([reader, writer] = suite.apps));

  const rowKey = (id: number) => {
    const table = reader.dataSource.getMetadata(Article).tablePath;
    return keys.shard(table, keys.shardOf(String(id))).row(String(id));
  };

  afterEach(() => vi.restoreAllMocks());

  it('discards a database value read while a batch was flushed and the row expired', async () => {
    const [id] = await insertArticles(reader.dataSource, [10]);
    const readerDatabase = reader.app.get(CounterDatabase);
    const realRead = readerDatabase.readCounters.bind(readerDatabase);
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    let readDone!: () => void;
    const hasRead = new Promise<void>((resolve) => (readDone = resolve));
    const read = vi.spyOn(readerDatabase, 'readCounters').mockImplementationOnce(async (entity, ids) => {
      const values = await realRead(entity, ids); // like_count = 10
      readDone();
      await paused;
      return values;
    });

    const live = reader.counters.get(Article, id, 'like_count');
    await hasRead;
    expect(await redis.exists(rowKey(id))).toBe(0);
    // Meanwhile another instance counts +5 and flushes it; the clean row then expires from Redis.
    expect(await writer.counters.increment(Article, id, 'like_count', 5)).toBe(15);
    expect((await writer.counters.flush()).error).toBeUndefined();
    expect((await articleCounts(writer.dataSource, [id])).get(id)!.likes).toBe(15);
    await expect.poll(() => redis.exists(rowKey(id)), { timeout: 5_000, interval: 100 }).toBe(0);

    resume();
    // The stale 10 must not be seeded: the reader reads again and gets 15.
    expect(await live).toBe(15);
    expect(read).toHaveBeenCalledTimes(2);
    expect(await reader.counters.increment(Article, id, 'like_count')).toBe(16);
    expect((await reader.counters.flush()).error).toBeUndefined();
    expect((await articleCounts(reader.dataSource, [id])).get(id)!.likes).toBe(16);
  });

  it('never seeds a row over a batch that is still in flight for it', async () => {
    const [id, other] = await insertArticles(reader.dataSource, [20, 50]);
    expect(await writer.counters.increment(Article, id, 'like_count', 7)).toBe(27);
    // The writer commits the batch (database 27) and dies before the ack: +7 is still in flight.
    vi.spyOn(writer.app.get(FlushStore), 'ack').mockRejectedValue(new Error('crashed before the ack'));
    vi.spyOn(writer.app.get(FlushStore), 'release').mockRejectedValue(new Error('crashed'));
    expect((await writer.counters.flush()).error?.message).toBe('crashed before the ack');
    vi.restoreAllMocks();
    expect((await articleCounts(reader.dataSource, [id])).get(id)!.likes).toBe(27);
    // The row expires (TTL 1 s) while its +7 is in flight: seeding 27 now would count it twice.
    await expect.poll(() => redis.exists(rowKey(id)), { timeout: 5_000, interval: 100 }).toBe(0);
    await expect(reader.counters.increment(Article, id, 'like_count')).rejects.toBeInstanceOf(
      CounterSeedContentionError,
    );
    await expect(reader.counters.get(Article, id, 'like_count')).rejects.toBeInstanceOf(CounterSeedContentionError);
    // A row the batch does not hold seeds as usual meanwhile.
    expect(await reader.counters.get(Article, other, 'like_count')).toBe(50);

    // Once the lease expires, the next flush finds the batch in the ledger and acknowledges it.
    await expect
      .poll(async () => (await reader.counters.flush()).recoveredBatches, { timeout: 5_000, interval: 100 })
      .toBe(1);
    expect(await reader.counters.get(Article, id, 'like_count')).toBe(27);
    expect(await reader.counters.increment(Article, id, 'like_count')).toBe(28);
    expect((await reader.counters.flush()).error).toBeUndefined();
    expect((await articleCounts(reader.dataSource, [id])).get(id)!.likes).toBe(28);
  });

  it('seeds a row that expired with changes pending from the database value plus them', async () => {
    const [id] = await insertArticles(reader.dataSource, [10]);
    expect(await writer.counters.increment(Article, id, 'like_count', 5)).toBe(15);
    expect(await writer.counters.increment(Article, id, 'like_count', 2)).toBe(17);
    // The row is a cache (TTL 1 s) even with changes pending: they wait in the shard's pending hash.
    await expect.poll(() => redis.exists(rowKey(id)), { timeout: 5_000, interval: 100 }).toBe(0);
    expect((await articleCounts(reader.dataSource, [id])).get(id)).toEqual({ likes: 10, views: 0 });

    // Database 10 + pending 7 for like_count; database 0 + nothing pending for view_count.
    expect(await reader.counters.increment(Article, id, 'view_count', 3)).toBe(3);
    expect(await reader.counters.get(Article, id, 'like_count')).toBe(17);
    expect(await reader.counters.increment(Article, id, 'like_count')).toBe(18);
    expect((await reader.counters.flush()).error).toBeUndefined();
    expect((await articleCounts(reader.dataSource, [id])).get(id)).toEqual({ likes: 18, views: 3 });
    expect(await writer.counters.getMany(Article, [id])).toEqual(new Map([[id, { like_count: 18, view_count: 3 }]]));
  });

  it('stays exact while reads seed expiring rows during concurrent increments and flushes', async () => {
    const seed = testSeed();
    const random = seededRandom(seed);
    const ids = await insertArticles(
      reader.dataSource,
      Array.from({ length: 40 }, (_, i) => i),
    );
    const expected = new Map(ids.map((id, i) => [id, i]));
    const deadline = Date.now() + 3_000;
    const apps = [reader, writer];
    const loops = [
      ...apps.map(async (app) => {
        while (Date.now() < deadline) {
          expect((await app.counters.flush()).error).toBeUndefined();
          await new Promise((resolve) => setTimeout(resolve, random() * 50));
        }
      }),
      ...Array.from({ length: 8 }, async () => {
        while (Date.now() < deadline) {
          const app = apps[Math.floor(random() * apps.length)];
          const sample = ids.filter(() => random() < 0.2);
          if (random() < 0.5) {
            await app.counters.getMany(Article, sample);
          } else {
            const id = sample[0] ?? ids[0];
            await app.counters.increment(Article, id, 'like_count', 2);
            expected.set(id, expected.get(id)! + 2);
          }
          // Pauses long enough for clean rows to expire (TTL 1 s) between their reads.
          if (random() < 0.05) await new Promise((resolve) => setTimeout(resolve, 1_100));
        }
      }),
    ];
    await Promise.all(loops);
    expect((await writer.counters.flush()).error).toBeUndefined();
    const stored = await articleCounts(reader.dataSource, ids);
    expect(
      ids.map((id) => stored.get(id)!.likes),
      `seed ${seed}`,
    ).toEqual(ids.map((id) => expected.get(id)));
    const live = await reader.counters.getMany(Article, ids, ['like_count']);
    expect(
      ids.map((id) => live.get(id)!.like_count),
      `seed ${seed}`,
    ).toEqual(ids.map((id) => expected.get(id)));
  });

  it('loads rows of a shard that flushes without pause, with no contention reaching a caller', async () => {
    const random = seededRandom(testSeed());
    const ids = await insertArticles(
      reader.dataSource,
      Array.from({ length: 300 }, () => 1),
    );
    // The rows of one shard: a hot one that keeps the shard's flushes busy, and the others to load.
    const [hot, ...cold] = [...groupBy(ids, (id) => keys.shardOf(String(id))).values()].sort(
      (a, b) => b.length - a.length,
    )[0];
    // The other instance's acknowledgements, each announced once it is done.
    let acked = signal();
    const writerStore = writer.app.get(FlushStore);
    const realAck = writerStore.ack.bind(writerStore);
    vi.spyOn(writerStore, 'ack').mockImplementation(async (...args) => {
      const outcome = await realAck(...args);
      const done = acked;
      acked = signal();
      done.resolve();
      return outcome;
    });
    // A busy database: most reads of a row to load last until a flush of its shard was acknowledged.
    const readerDatabase = reader.app.get(CounterDatabase);
    const realRead = readerDatabase.readCounters.bind(readerDatabase);
    vi.spyOn(readerDatabase, 'readCounters').mockImplementation(async (entity, rows) => {
      if (random() < SLOW_READS) await Promise.race([acked.promise, sleep(SLOW_READ_LIMIT_MS)]);
      return realRead(entity, rows);
    });

    // The other instance changes the hot row and flushes, in a loop: each flush moves the shard's
    // generation, which a load that read the database meanwhile must not seed over.
    let flushing = true;
    const churn = (async () => {
      while (flushing) {
        await writer.counters.increment(Article, hot, 'like_count');
        expect((await writer.counters.flush()).error).toBeUndefined();
        await sleep(1);
      }
    })();
    const queue = [...cold];
    const loaded: number[] = [];
    let contended = 0;
    await Promise.all(
      Array.from({ length: LOADERS }, async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          try {
            loaded.push(await reader.counters.get(Article, id, 'like_count'));
          } catch (error) {
            if (!(error instanceof CounterSeedContentionError)) throw error;
            contended++;
          }
        }
      }),
    );
    flushing = false;
    await churn;

    expect(contended).toBe(0);
    expect(loaded).toEqual(cold.map(() => 1));
  });
});
