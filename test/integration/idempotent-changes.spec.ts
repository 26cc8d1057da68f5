import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CounterOutOfRangeError, InvalidIdempotencyKeyError, type CounterChangeOutcome } from '../../lib/index.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { Article, Remark } from '../fixtures/entities.js';
import { tapCommands, type SentCommand } from '../../support/command-tap.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, uniquePrefix, type AnyRedis } from '../../support/redis.js';
import { ScriptKeyAudit } from '../support/script-key-audit.js';
import { inspectionClient, moduleClient, TOPOLOGIES } from '../support/topologies.js';

/** startCounterApp's default. */
const SHARDS = 8;
/** The short lifetime of the expiry tests; the waits below exceed it by a fixed margin. */
const SHORT_TTL_SECONDS = 1;
/** Past a short-lived key's expiry: its lifetime plus 300 ms for the calls around the wait. */
const PAST_SHORT_TTL_MS = SHORT_TTL_SECONDS * 1000 + 300;
/** Expired keys one keyed change prunes (IDEMPOTENCY_PRUNE_PER_CHANGE, restated: the spec pins it). */
const PRUNED_PER_CHANGE = 8;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// G8: a change carrying an idempotency key applies at most once per row within the key's lifetime,
// whatever the retries and instances; its retries resolve with the current value and `applied: false`.
describe.each(TOPOLOGIES)('changes with an idempotency key on %s', (topology) => {
  const prefix = uniquePrefix('idem');
  const shortPrefix = uniquePrefix('idem-ttl');
  const redis: AnyRedis = inspectionClient(topology);
  /** The client of the two apps of the expiry tests: every command they send is recorded. */
  const client = moduleClient(topology);
  const sent: SentCommand[] = [];
  let untap: () => void;
  let database: TestDatabase;
  /** Three instances of one deployment (one key prefix), default key lifetime (a day). */
  const instances: CounterApp[] = [];
  /** Two instances on another prefix, keys remembered 1 s and 60 s. */
  let shortLived: CounterApp;
  let longLived: CounterApp;

  const counters = () => instances[0].counters;
  const save = (likeCount: number) =>
    instances[0].dataSource.getRepository(Article).save({ title: 'idem', likeCount, viewCount: 0 });
  const stored = async (id: number) => {
    const row = await instances[0].dataSource.getRepository(Article).findOneByOrFail({ id });
    return { likes: row.likeCount, views: Number(row.viewCount) };
  };
  const flush = async () => expect((await counters().flush()).error).toBeUndefined();
  const recordOf = (keyPrefix: string, id: number) => {
    const keys = new CounterKeys(keyPrefix, SHARDS);
    const table = instances[0].dataSource.getMetadata(Article).tablePath;
    return keys.shard(table, keys.shardOf(String(id)));
  };

  beforeAll(async () => {
    database = await createTestDatabase(DATABASES[0]);
    for (let i = 0; i < 3; i++) {
      instances.push(
        await startCounterApp({ database: database.options, keyPrefix: prefix, synchronize: i === 0, topology }),
      );
    }
    untap = tapCommands(client, (command) => sent.push(command));
    const onClient = (idempotencyTtlSeconds: number) =>
      startCounterApp({
        database: database.options,
        keyPrefix: shortPrefix,
        synchronize: false,
        redis: client,
        counter: { idempotencyTtlSeconds },
      });
    shortLived = await onClient(SHORT_TTL_SECONDS);
    longLived = await onClient(60);
  });

  afterAll(async () => {
    untap?.();
    for (const app of [...instances, shortLived, longLived]) await app?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    await deleteKeys(redis, shortPrefix);
    client.disconnect();
    redis.disconnect();
  });

  it('applies a keyed change once; its retries apply nothing and resolve with the current value', async () => {
    const article = await save(10);
    const key = 'like-7f3a';
    expect(await counters().change(Article, article.id, 'like_count', 5, { idempotencyKey: key })).toEqual({
      value: 15,
      applied: true,
    });
    // A plain change in between moves the value a retry answers with.
    expect(await counters().increment(Article, article.id, 'like_count', 2)).toBe(17);
    expect(await counters().change(Article, article.id, 'like_count', 5, { idempotencyKey: key })).toEqual({
      value: 17,
      applied: false,
    });
    expect(await counters().increment(Article, article.id, 'like_count', 5, { idempotencyKey: key })).toBe(17);
    // The recorded outcome wins over a retry's other delta, sign, or counter: the key names one change of the row.
    expect(await counters().decrement(Article, article.id, 'like_count', 3, { idempotencyKey: key })).toBe(17);
    expect(await counters().change(Article, article.id, 'view_count', 4, { idempotencyKey: key })).toEqual({
      value: 0,
      applied: false,
    });
    // From another instance too.
    expect(await instances[2].counters.change(Article, article.id, 'like_count', 5, { idempotencyKey: key })).toEqual({
      value: 17,
      applied: false,
    });
    await flush();
    expect(await stored(article.id)).toEqual({ likes: 17, views: 0 });
    // After the flush the key is still remembered.
    expect(await counters().change(Article, article.id, 'like_count', 5, { idempotencyKey: key })).toEqual({
      value: 17,
      applied: false,
    });
  });

  it('applies one of 30 concurrent calls with one key from three instances, on an unseeded row', async () => {
    const article = await save(3);
    const outcomes = await Promise.all(
      instances.flatMap((instance) =>
        Array.from({ length: 10 }, () =>
          instance.counters.change(Article, article.id, 'like_count', 4, { idempotencyKey: 'once' }),
        ),
      ),
    );
    expect(outcomes.filter(({ applied }) => applied)).toEqual([{ value: 7, applied: true }]);
    expect(outcomes.filter(({ applied }) => !applied)).toEqual(Array(29).fill({ value: 7, applied: false }));
    await flush();
    expect(await stored(article.id)).toEqual({ likes: 7, views: 0 });
  });

  it('keeps the same key on different rows, and of different entities, independent', async () => {
    const [first, second] = await Promise.all([save(0), save(100)]);
    await instances[0].dataSource.getRepository(Remark).save({ id: `idem-${prefix}`, replyCount: 1 });
    const key = 'shared-key';
    const outcomes = await Promise.all([
      counters().change(Article, first.id, 'like_count', 1, { idempotencyKey: key }),
      counters().change(Article, second.id, 'like_count', 1, { idempotencyKey: key }),
      counters().change(Remark, `idem-${prefix}`, 'reply_count', 1, { idempotencyKey: key }),
    ]);
    expect(outcomes).toEqual([
      { value: 1, applied: true },
      { value: 101, applied: true },
      { value: 2, applied: true },
    ]);
    expect(await counters().change(Article, second.id, 'like_count', 1, { idempotencyKey: key })).toEqual({
      value: 101,
      applied: false,
    });
    await flush();
    expect([await stored(first.id), await stored(second.id)]).toEqual([
      { likes: 1, views: 0 },
      { likes: 101, views: 0 },
    ]);
  });

  it('remembers a key when the row left Redis, and records nothing for an out-of-range change', async () => {
    const article = await save(0);
    expect(await counters().change(Article, article.id, 'view_count', 9, { idempotencyKey: 'views' })).toEqual({
      value: 9,
      applied: true,
    });
    // The row's cached values expire; the retry loads the row again, then finds its key.
    await redis.del(recordOf(prefix, article.id).row(String(article.id)));
    expect(await counters().change(Article, article.id, 'view_count', 9, { idempotencyKey: 'views' })).toEqual({
      value: 9,
      applied: false,
    });
    // Refused by the counter's bounds (min 0): nothing recorded, so the same key applies once it fits.
    await expect(
      counters().change(Article, article.id, 'like_count', -2, { idempotencyKey: 'unlike' }),
    ).rejects.toBeInstanceOf(CounterOutOfRangeError);
    expect(await counters().increment(Article, article.id, 'like_count', 3)).toBe(3);
    expect(await counters().change(Article, article.id, 'like_count', -2, { idempotencyKey: 'unlike' })).toEqual({
      value: 1,
      applied: true,
    });
    expect(await counters().change(Article, article.id, 'like_count', -2, { idempotencyKey: 'unlike' })).toEqual({
      value: 1,
      applied: false,
    });
    await flush();
    expect(await stored(article.id)).toEqual({ likes: 1, views: 9 });
  });

  it('applies plain and keyed changes of one turn each as asked, plain ones unaffected', async () => {
    const article = await save(0);
    await counters().get(Article, article.id, 'like_count');
    const results = await Promise.all([
      counters().increment(Article, article.id, 'like_count'),
      counters().change(Article, article.id, 'like_count', 10, { idempotencyKey: 'k1' }),
      counters().increment(Article, article.id, 'like_count'),
      counters().change(Article, article.id, 'like_count', 10, { idempotencyKey: 'k1' }),
      counters().decrement(Article, article.id, 'like_count', 1, { idempotencyKey: 'k2' }),
      counters().increment(Article, article.id, 'like_count'),
    ]);
    // One call, in the order asked: 1, 11, 12, (k1 again: 12), 11, 12.
    expect(results).toEqual([1, { value: 11, applied: true }, 12, { value: 12, applied: false }, 11, 12]);
    const plain = await Promise.all(
      Array.from({ length: 50 }, () => counters().increment(Article, article.id, 'like_count')),
    );
    expect([...plain].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => 13 + i));
    await flush();
    expect(await stored(article.id)).toEqual({ likes: 62, views: 0 });
  });

  it('refuses invalid keys with a typed error, and writes nothing', async () => {
    const article = await save(5);
    const refused: unknown[] = ['', 'k'.repeat(201), 42, null, { key: 'x' }];
    for (const idempotencyKey of refused) {
      const change = counters().change(Article, article.id, 'like_count', 1, {
        idempotencyKey: idempotencyKey as string,
      });
      await expect(change).rejects.toBeInstanceOf(InvalidIdempotencyKeyError);
      await expect(change).rejects.toThrow(/non-empty string of at most 200 characters/);
    }
    // Nothing reached Redis for the row: no cached values, no pending change, no key recorded.
    const shard = recordOf(prefix, article.id);
    expect(await redis.exists(shard.row(String(article.id)))).toBe(0);
    expect(await redis.hget(shard.pending, `${article.id} like_count`)).toBeNull();
    expect(await redis.zrangebyscore(shard.idempotency, '-inf', '+inf')).not.toContainEqual(
      expect.stringMatching(new RegExp(`^${article.id} `)),
    );
    // 200 characters is the longest key taken.
    const longest = 'k'.repeat(200);
    expect(await counters().change(Article, article.id, 'like_count', 1, { idempotencyKey: longest })).toEqual({
      value: 6,
      applied: true,
    });
  });

  it('refuses keys that are not well-formed Unicode, so that keys that differ never collide', async () => {
    const article = await save(0);
    // Sent as UTF-8, a lone surrogate becomes U+FFFD: taken as they are, these three would be one key.
    const outcomes: unknown[] = [];
    for (const idempotencyKey of ['\uD800', '\uDBFF', '\uFFFD']) {
      outcomes.push(
        await counters()
          .change(Article, article.id, 'like_count', 1, { idempotencyKey })
          .catch((error: Error) => error.name),
      );
    }
    expect(outcomes).toEqual(['InvalidIdempotencyKeyError', 'InvalidIdempotencyKeyError', { value: 1, applied: true }]);

    for (const idempotencyKey of ['\uD800', 'key-\uDC00', '\uDE00\uD83D']) {
      const change = counters().change(Article, article.id, 'like_count', 1, { idempotencyKey });
      await expect(change).rejects.toBeInstanceOf(InvalidIdempotencyKeyError);
      await expect(change).rejects.toThrow(/well-formed Unicode: it holds a lone surrogate/);
    }
    // Nothing recorded for the refused keys: only U+FFFD's member; a surrogate pair is a key of its own.
    const shard = recordOf(prefix, article.id);
    const members = await redis.zrangebyscore(shard.idempotency, '-inf', '+inf');
    expect(members.filter((member) => member.startsWith(`${article.id} `))).toEqual([`${article.id} \uFFFD`]);
    expect(await counters().change(Article, article.id, 'like_count', 1, { idempotencyKey: '\uD83D\uDE00' })).toEqual({
      value: 2,
      applied: true,
    });
    await flush();
    expect(await stored(article.id)).toEqual({ likes: 2, views: 0 });
  });

  it('forgets a key after its lifetime, and prunes expired keys a bounded number per keyed change', async () => {
    const audit = await ScriptKeyAudit.start(redis);
    const from = sent.length;
    const short = shortLived.counters;
    const article = await save(0);
    const record = recordOf(shortPrefix, article.id).idempotency;
    const twelve = Array.from({ length: 12 }, (_, i) => `old-${i}`);
    const applied = await Promise.all(
      twelve.map((idempotencyKey) => short.change(Article, article.id, 'view_count', 1, { idempotencyKey })),
    );
    expect(applied.every((outcome: CounterChangeOutcome) => outcome.applied)).toBe(true);
    // The record has no TTL, which a Redis that evicts keys with one (volatile-*) could evict.
    expect(await redis.zcard(record)).toBe(12);
    expect(await redis.pttl(record)).toBe(-1);
    expect(await short.change(Article, article.id, 'view_count', 1, { idempotencyKey: 'old-0' })).toEqual({
      value: 12,
      applied: false,
    });
    await sleep(PAST_SHORT_TTL_MS);
    // Expired keys stay until keyed changes of the shard prune them.
    expect(await redis.zcard(record)).toBe(12);
    // Forgotten: the key applies again (its member renewed), and the change prunes the oldest expired keys.
    expect(await short.change(Article, article.id, 'view_count', 1, { idempotencyKey: 'old-0' })).toEqual({
      value: 13,
      applied: true,
    });
    expect(await redis.zcard(record)).toBe(12 - PRUNED_PER_CHANGE);

    // Twelve more keyed changes prune the three keys left expired; with a long-lived key in the record,
    // its expired members are pruned by later keyed changes.
    await Promise.all(
      twelve.map((idempotencyKey) =>
        short.change(Article, article.id, 'view_count', 1, { idempotencyKey: `${idempotencyKey}b` }),
      ),
    );
    await longLived.counters.change(Article, article.id, 'view_count', 1, { idempotencyKey: 'long' });
    expect(await redis.zcard(record)).toBe(1 + 12 + 1);
    await sleep(PAST_SHORT_TTL_MS);
    expect(await redis.zcard(record)).toBe(14);
    // Each keyed change adds its key and removes at most PRUNED_PER_CHANGE expired ones.
    await longLived.counters.change(Article, article.id, 'view_count', 1, { idempotencyKey: 'next-1' });
    expect(await redis.zcard(record)).toBe(14 + 1 - PRUNED_PER_CHANGE);
    await longLived.counters.change(Article, article.id, 'view_count', 1, { idempotencyKey: 'next-2' });
    expect(await redis.zrange(record, '0', '-1')).toEqual([
      `${article.id} long`,
      `${article.id} next-1`,
      `${article.id} next-2`,
    ]);
    expect(await longLived.counters.get(Article, article.id, 'view_count')).toBe(12 + 1 + 12 + 1 + 2);

    // Pruned without a scan of the keyspace, by the app or inside a script.
    const audited = (await audit.seen(redis)).filter(({ declared }) => declared.includes(record));
    audit.stop();
    const ran = audited.flatMap(({ commands }) => commands.map(([name]) => name.toLowerCase()));
    expect(ran).toContain('zremrangebyrank');
    const scans = (name: string) => ['scan', 'keys'].includes(name);
    expect(ran.filter(scans)).toEqual([]);
    expect(sent.slice(from).filter(({ name }) => scans(name))).toEqual([]);
  });
});
