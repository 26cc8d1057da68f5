import { describe, expect, it } from 'vitest';
import { groupBy } from '../../../lib/collections.js';
import { CounterKeys } from '../../../lib/redis/counter.keys.js';
import { useCounterSuite } from '../../support/counter-suite.js';
import { Article } from '../../fixtures/entities.js';
import { Post, WINDOWED_ENTITIES } from '../../fixtures/windowed-entities.js';
import { articleCounts, insertArticles } from '../../../support/rows.js';

// Performance contract: these tests pin the shape of an optimisation documented in docs/PERFORMANCE.md (the
// pending hash kept as a hash table), not a guarantee, and change when that optimisation does. The
// guarantees it must keep are proven by the specs in test/integration/.

const SHARDS = 8;
const WIDE = { '#wide': '-'.repeat(65) };

// A shard's pending hash, where increments add their changes: the first change that makes one, and a
// claim that leaves a new one, make Redis keep it as a hash table (a listpack, Redis's form for small
// hashes, is searched field by field on every HINCRBY). Redis only, so one database is enough.
describe('the pending hash of a shard', () => {
  const suite = useCounterSuite('sqlite', 'pending', { shards: SHARDS });

  it('is a hash table holding the changes since the last claim and a field that is none of them', async () => {
    const { counters, dataSource } = suite.counter;
    const [id] = await insertArticles(dataSource, [10]);
    const keys = new CounterKeys(suite.prefix, SHARDS);
    const shard = keys.shard(dataSource.getMetadata(Article).tablePath, keys.shardOf(String(id)));
    const change = `${id} like_count`;

    // Before any claim of the shard: the first change made the hash, and the field with it.
    await counters.increment(Article, id, 'like_count', 2);
    expect(await suite.redis.hgetall(shard.pending)).toEqual({ [change]: '2', ...WIDE });
    expect(await suite.redis.object('ENCODING', shard.pending)).toBe('hashtable');
    await counters.increment(Article, id, 'like_count', 4);
    expect(await suite.redis.hgetall(shard.pending)).toEqual({ [change]: '6', ...WIDE });

    expect((await counters.flush()).error).toBeUndefined();
    expect(await suite.redis.hgetall(shard.pending)).toEqual(WIDE);
    expect(await suite.redis.object('ENCODING', shard.pending)).toBe('hashtable');

    await counters.increment(Article, id, 'like_count', 3);
    await counters.increment(Article, id, 'view_count', 1);
    expect(await suite.redis.hgetall(shard.pending)).toEqual({ [change]: '3', [`${id} view_count`]: '1', ...WIDE });
    expect(await suite.redis.object('ENCODING', shard.pending)).toBe('hashtable');

    // The field goes into the next batch with the changes and is never written anywhere.
    const report = await counters.flush();
    expect([report.error, report.rows]).toEqual([undefined, 1]);
    expect((await articleCounts(dataSource, [id])).get(id)).toEqual({ likes: 19, views: 1 });
    expect((await counters.status()).pendingRows).toBe(0);
  });

  it('is a hash table when several changes sent together make it', async () => {
    const { counters, dataSource } = suite.counter;
    const ids = await insertArticles(
      dataSource,
      Array.from({ length: 300 }, () => 0),
    );
    const keys = new CounterKeys(suite.prefix, SHARDS);
    const table = dataSource.getMetadata(Article).tablePath;
    // Two rows of a shard that no change has touched yet (the test before may have touched one).
    const idsByShard = groupBy(ids, (id) => keys.shardOf(String(id)));
    const shards = [...idsByShard.keys()].map((number) => keys.shard(table, number));
    const untouched = await Promise.all(shards.map(async (each) => (await suite.redis.exists(each.pending)) === 0));
    const shard = shards.find((each, index) => untouched[index] && idsByShard.get(each.shard)!.length >= 2)!;
    const [a, b] = idsByShard.get(shard.shard)!;
    expect(keys.shardOf(String(b))).toBe(shard.shard);
    await counters.getMany(Article, [a, b]);
    expect(await suite.redis.exists(shard.pending)).toBe(0);

    // Requested in one turn of the event loop: one call of the script for several changes.
    await Promise.all([
      counters.increment(Article, a, 'like_count', 1),
      counters.increment(Article, b, 'like_count', 2),
      counters.increment(Article, a, 'view_count', 3),
    ]);
    expect(await suite.redis.hgetall(shard.pending)).toEqual({
      [`${a} like_count`]: '1',
      [`${b} like_count`]: '2',
      [`${a} view_count`]: '3',
      ...WIDE,
    });
    expect(await suite.redis.object('ENCODING', shard.pending)).toBe('hashtable');
  });
});

// A windowed counter's change makes two fields (the change and its bucket): the first change still makes
// the hash a hash table. Without it, a shard's few hundred fields stayed a listpack, and a windowed
// increment cost Redis twice a plain one.
describe('the pending hash of a shard of windowed counters', () => {
  const suite = useCounterSuite('sqlite', 'pending-windowed', { shards: SHARDS }, 1, WINDOWED_ENTITIES);

  it('is a hash table from the first change, whose bucket field came with it', async () => {
    const { counters, dataSource } = suite.counter;
    const id = 7;
    await dataSource.getRepository(Post).insert({ id, viewCount: 0, likeCount: 0, shareCount: 0 });
    const keys = new CounterKeys(suite.prefix, SHARDS);
    const shard = keys.shard(dataSource.getMetadata(Post).tablePath, keys.shardOf(String(id)));

    await counters.increment(Post, id, 'view_count', 2);
    const fields = await suite.redis.hgetall(shard.pending);
    const bucket = Object.keys(fields).find((field) => field.startsWith(`${id} view_count@h`))!;
    expect(fields).toEqual({ [`${id} view_count`]: '2', [bucket]: '2', ...WIDE });
    expect(await suite.redis.object('ENCODING', shard.pending)).toBe('hashtable');
  });

  it('is a hash table when several changes of windowed counters sent together make it', async () => {
    const { counters, dataSource } = suite.counter;
    const keys = new CounterKeys(suite.prefix, SHARDS);
    const table = dataSource.getMetadata(Post).tablePath;
    // Two rows of a shard no change has touched yet.
    const ids = Array.from({ length: 100 }, (_, index) => 100 + index);
    const shard = keys.shard(table, keys.shardOf(String(1_000)));
    const [a, b] = ids.filter((id) => keys.shardOf(String(id)) === shard.shard);
    expect(await suite.redis.exists(shard.pending)).toBe(0);
    await dataSource
      .getRepository(Post)
      .insert([a, b].map((id) => ({ id, viewCount: 0, likeCount: 0, shareCount: 0 })));
    await counters.getMany(Post, [a, b]);

    await Promise.all([
      counters.increment(Post, a, 'view_count', 1),
      counters.increment(Post, b, 'like_count', 2),
      counters.increment(Post, a, 'like_count', 3),
    ]);
    expect(Object.keys(await suite.redis.hgetall(shard.pending))).toHaveLength(7);
    expect(await suite.redis.object('ENCODING', shard.pending)).toBe('hashtable');
  });
});
