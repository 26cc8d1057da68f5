import { describe, expect, it } from 'vitest';
import { COUNTER_DEFAULTS } from '../lib/counter.constants.js';
import { CounterKeys } from '../lib/redis/keys.js';
import { useCounterSuite } from './support/counter-suite.js';
import { Article } from './support/entities.js';
import { articleCounts, insertArticles } from './support/rows.js';

const WIDE = { '#wide': '-'.repeat(65) };

// A shard's pending hash, where increments add their changes: a claim leaves a new one that Redis keeps
// as a hash table (a listpack, Redis's form for small hashes, is searched field by field on every
// HINCRBY). Redis only, so one database is enough.
describe('the pending hash a claim leaves', () => {
  const suite = useCounterSuite('sqlite', 'pending');

  it('is a hash table holding the changes since the claim and a field that is none of them', async () => {
    const { counters, dataSource } = suite.counter;
    const [id] = await insertArticles(dataSource, [10]);
    const keys = new CounterKeys(suite.prefix, COUNTER_DEFAULTS.shards);
    const shard = keys.shard(dataSource.getMetadata(Article).tablePath, keys.shardOf(String(id)));
    const change = `${id} like_count`;

    // Before any claim of the shard: Redis's own choice for a hash of one short field.
    await counters.increment(Article, id, 'like_count', 2);
    expect(await suite.redis.hgetall(shard.pending)).toEqual({ [change]: '2' });
    expect(await suite.redis.object('ENCODING', shard.pending)).toBe('listpack');

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
    expect((await articleCounts(dataSource, [id])).get(id)).toEqual({ likes: 15, views: 1 });
    expect((await counters.status()).pendingRows).toBe(0);
  });
});
