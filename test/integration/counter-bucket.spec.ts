import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { CounterBucket, Counted } from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import type { CountedEntity, CounterField } from '../../lib/model/counted-entity.js';
import type { DeltaBatch } from '../../lib/model/delta-batch.js';
import { bucketStart, type Granularity } from '../../lib/model/time-bucket.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { DATABASES } from '../../support/databases.js';
import { bucketDeltasOf, type Place } from '../support/rolling-tables.js';

@Entity('bucket_post')
class Post {
  @PrimaryGeneratedColumn()
  id!: number;

  @Counted('view_count', { windows: ['hour', 'day'] })
  @Column({ name: 'view_count', type: 'int', default: 0 })
  viewCount!: number;
}

/** String ids, with characters that mean something elsewhere (`:`, `{`), and a non-ASCII one. */
@Entity('bucket_tag')
class Tag {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Counted('use_count', { windows: ['day'] })
  @Column({ name: 'use_count', type: 'int', default: 0 })
  useCount!: number;
}

const HOUR = 3_600;
const DAY = 86_400;
/** Two hours before midnight UTC, so that its hours fall in two days. */
const DAY_0 = bucketStart('day', 1_764_201_600);
const H = (n: number) => DAY_0 + DAY - 2 * HOUR + n * HOUR;
const D = (n: number) => DAY_0 + n * DAY;

/** A batch of one counter: each row's total change, and its bucket changes. */
function batch(
  entity: CountedEntity,
  counter: CounterField,
  rows: Array<[id: string | number, delta: number]>,
  places: Place[],
  shard = 0,
): DeltaBatch {
  return {
    batchId: randomUUID(),
    entity,
    shard,
    counters: [counter],
    rows: { ids: rows.map(([id]) => id), deltas: rows.map(([, delta]) => delta) },
    buckets: bucketDeltasOf(counter, places),
  };
}

// The flush adds a batch's bucket changes in the transaction that writes its totals, under its ledger
// row: exactly once, and never for a row that is gone. A live window reads the stored buckets and the
// ledger in one statement.
describe.each(DATABASES)('counter buckets on %s', (database) => {
  const suite = useCounterSuite(database, 'buckets', undefined, 1, [Post, Tag]);
  let db: CounterDatabase;
  let posts: CountedEntity;
  let tags: CountedEntity;
  let views: CounterField;
  let uses: CounterField;

  beforeEach(async () => {
    db = suite.counter.app.get(CounterDatabase);
    const registry = suite.counter.app.get(CounterRegistry);
    posts = registry.get(Post);
    tags = registry.get(Tag);
    views = posts.counters[0];
    uses = tags.counters[0];
    await suite.counter.dataSource.getRepository(CounterBucket).clear();
  });

  /** Every stored bucket, as `entity counter row granularity start` → value. */
  async function stored(): Promise<Record<string, number>> {
    const rows = await suite.counter.dataSource.getRepository(CounterBucket).find();
    return Object.fromEntries(
      rows.map((row) => [
        `${row.entity} ${row.counter} ${row.rowId} ${row.granularity} ${Number(row.start)}`,
        Number(row.value),
      ]),
    );
  }

  async function insertPosts(count: number): Promise<number[]> {
    const saved = await suite.counter.dataSource.getRepository(Post).save(Array.from({ length: count }, () => ({})));
    return saved.map((post) => post.id);
  }

  async function viewCounts(ids: number[]): Promise<number[]> {
    const rows = await suite.counter.dataSource.getRepository(Post).find();
    const byId = new Map(rows.map((row) => [row.id, row.viewCount]));
    return ids.map((id) => byId.get(id)!);
  }

  it('inserts a batch’s buckets, then adds later batches’ to them and inserts the new ones', async () => {
    const [a, b, c] = await insertPosts(3);
    const first = batch(
      posts,
      views,
      [
        [a, 3],
        [b, 2],
      ],
      [
        [a, 'hour', H(0), 2],
        [a, 'hour', H(1), 1],
        [a, 'day', D(0), 3],
        [b, 'hour', H(0), 2],
        [b, 'day', D(0), 2],
      ],
    );
    expect(await db.applyBatches([first])).toEqual({ applied: true, missingIds: [[]] });
    const key = (id: number, granularity: Granularity, start: number) =>
      `${posts.key} view_count ${id} ${granularity} ${start}`;
    expect(await stored()).toEqual({
      [key(a, 'hour', H(0))]: 2,
      [key(a, 'hour', H(1))]: 1,
      [key(a, 'day', D(0))]: 3,
      [key(b, 'hour', H(0))]: 2,
      [key(b, 'day', D(0))]: 2,
    });

    // Two batches (of two shards) in one transaction; b's changes are negative, its bucket drops below 0.
    const second = batch(
      posts,
      views,
      [
        [a, 5],
        [b, -4],
      ],
      [
        [a, 'hour', H(1), 3],
        [a, 'hour', H(2), 2],
        [a, 'day', D(0), 3],
        [a, 'day', D(1), 2],
        [b, 'hour', H(0), -4],
        [b, 'day', D(0), -4],
      ],
      1,
    );
    const third = batch(posts, views, [[c, 7]], [[c, 'day', D(1), 7]], 2);
    expect(await db.applyBatches([second, third])).toEqual({ applied: true, missingIds: [[], []] });
    expect(await stored()).toEqual({
      [key(a, 'hour', H(0))]: 2,
      [key(a, 'hour', H(1))]: 4,
      [key(a, 'hour', H(2))]: 2,
      [key(a, 'day', D(0))]: 6,
      [key(a, 'day', D(1))]: 2,
      [key(b, 'hour', H(0))]: -2,
      [key(b, 'day', D(0))]: -2,
      [key(c, 'day', D(1))]: 7,
    });
    expect(await viewCounts([a, b, c])).toEqual([8, -2, 7]);
  });

  it('writes no bucket of a transaction whose batch the ledger has already', async () => {
    const [a] = await insertPosts(1);
    const written = batch(posts, views, [[a, 1]], [[a, 'hour', H(0), 1]]);
    expect(await db.applyBatches([written])).toEqual({ applied: true, missingIds: [[]] });
    const fresh = batch(posts, views, [[a, 5]], [[a, 'hour', H(0), 5]], 1);

    expect(await db.applyBatches([written])).toEqual({ applied: false });
    expect(await db.applyBatches([fresh, written])).toEqual({ applied: false });

    expect(await stored()).toEqual({ [`${posts.key} view_count ${a} hour ${H(0)}`]: 1 });
    expect(await viewCounts([a])).toEqual([1]);
    expect(await db.isBatchApplied(fresh.batchId)).toBe(false);
  });

  it('leaves out the buckets of rows that are gone', async () => {
    const [kept, deleted] = await insertPosts(2);
    await suite.counter.dataSource.getRepository(Post).delete(deleted);
    const changes = batch(
      posts,
      views,
      [
        [kept, 2],
        [deleted, 3],
      ],
      [
        [kept, 'day', D(0), 2],
        [deleted, 'hour', H(0), 3],
        [deleted, 'day', D(0), 3],
      ],
    );
    expect(await db.applyBatches([changes])).toEqual({ applied: true, missingIds: [[deleted]] });
    expect(await stored()).toEqual({ [`${posts.key} view_count ${kept} day ${D(0)}`]: 2 });
  });

  it('adds up the changes of one bucket that two batches of a transaction hold', async () => {
    const [a, b] = await insertPosts(2);
    const first = batch(posts, views, [[a, 2]], [[a, 'hour', H(0), 2]]);
    const second = batch(
      posts,
      views,
      [[b, 1]],
      [
        [a, 'hour', H(0), 3],
        [b, 'hour', H(0), 1],
      ],
      1,
    );
    expect(await db.applyBatches([first, second])).toEqual({ applied: true, missingIds: [[], []] });
    expect(await stored()).toEqual({
      [`${posts.key} view_count ${a} hour ${H(0)}`]: 5,
      [`${posts.key} view_count ${b} hour ${H(0)}`]: 1,
    });
  });

  it('writes more buckets than one statement takes', async () => {
    const [a] = await insertPosts(1);
    const count = 6_000;
    const places = Array.from({ length: count }, (_, n): Place => [a, 'hour', H(n), (n % 7) + 1]);
    const total = places.reduce((sum, [, , , delta]) => sum + delta, 0);
    expect(await db.applyBatches([batch(posts, views, [[a, total]], places)])).toEqual({
      applied: true,
      missingIds: [[]],
    });
    const read = await db.readBuckets(posts, views, a, [{ granularity: 'hour', from: H(0), to: H(count) }], undefined);
    expect(read.values).toEqual(new Map(places.map(([, , start, delta]) => [`hour ${start}`, delta])));
  });

  it('keys a string id’s buckets by its text', async () => {
    const ids = ['tag:1', '{tag}', 'café'];
    await suite.counter.dataSource.getRepository(Tag).insert(ids.map((id) => ({ id })));
    const changes = batch(
      tags,
      uses,
      ids.map((id, i) => [id, i + 1]),
      ids.map((id, i): Place => [id, 'day', D(0), i + 1]),
    );
    expect(await db.applyBatches([changes])).toEqual({ applied: true, missingIds: [[]] });
    expect(await stored()).toEqual({
      [`${tags.key} use_count tag:1 day ${D(0)}`]: 1,
      [`${tags.key} use_count {tag} day ${D(0)}`]: 2,
      [`${tags.key} use_count café day ${D(0)}`]: 3,
    });
    const read = await db.readBuckets(tags, uses, 'café', [{ granularity: 'day', from: D(0), to: D(1) }], undefined);
    expect(read.values).toEqual(new Map([[`day ${D(0)}`, 3]]));
  });

  it('reads the row’s stored buckets in the ranges, and whether the ledger has the batch, at once', async () => {
    const [a, other] = await insertPosts(2);
    const everywhere = (id: number, delta: number): Place[] => [
      ...[0, 1, 2, 3].map((n): Place => [id, 'hour', H(n), delta * (n + 1)]),
      ...[0, 1, 2].map((n): Place => [id, 'day', D(n), delta * 10 * (n + 1)]),
    ];
    const changes = batch(
      posts,
      views,
      [
        [a, 1],
        [other, 1],
      ],
      [...everywhere(a, 1), ...everywhere(other, 100)],
    );
    await db.applyBatches([changes]);
    const ranges = [
      { granularity: 'hour' as const, from: H(1), to: H(3) },
      { granularity: 'day' as const, from: D(1), to: D(2) },
    ];

    expect(await db.readBuckets(posts, views, a, ranges, changes.batchId)).toEqual({
      values: new Map([
        [`hour ${H(1)}`, 2],
        [`hour ${H(2)}`, 3],
        [`day ${D(1)}`, 20],
      ]),
      batchApplied: true,
    });
    // The id as text is the same row; a batch the ledger does not have, or none, is not applied.
    const unknown = await db.readBuckets(posts, views, String(a), ranges, randomUUID());
    expect(unknown).toEqual({
      values: new Map([
        [`hour ${H(1)}`, 2],
        [`hour ${H(2)}`, 3],
        [`day ${D(1)}`, 20],
      ]),
      batchApplied: false,
    });
    expect((await db.readBuckets(posts, views, a, ranges, undefined)).batchApplied).toBe(false);
    expect(await db.readBuckets(posts, views, a, [], changes.batchId)).toEqual({
      values: new Map(),
      batchApplied: true,
    });
    expect(await db.readBuckets(posts, views, a, [{ granularity: 'hour', from: H(10), to: H(20) }], undefined)).toEqual(
      { values: new Map(), batchApplied: false },
    );
  });

  it('prunes at most the limit of a granularity’s buckets that start before the time, oldest first', async () => {
    const [a] = await insertPosts(1);
    const places: Place[] = [
      ...[0, 1, 2, 3, 4].map((n): Place => [a, 'hour', H(n), n + 1]),
      [a, 'day', D(0), 10],
      [a, 'day', D(1), 20],
    ];
    await db.applyBatches([batch(posts, views, [[a, 30]], places)]);
    const hours = async () =>
      Object.keys(await stored())
        .filter((key) => key.includes(' hour '))
        .map((key) => Number(key.split(' ').at(-1)))
        .sort((x, y) => x - y);

    const ofViews = (granularity: 'hour' | 'day') => ({ entity: posts.key, counter: 'view_count', granularity });
    expect(await db.pruneBuckets(ofViews('hour'), H(3), 2)).toBe(2);
    expect(await hours()).toEqual([H(2), H(3), H(4)]);
    expect(await db.pruneBuckets(ofViews('hour'), H(3), 10)).toBe(1);
    expect(await hours()).toEqual([H(3), H(4)]);
    expect(await db.pruneBuckets(ofViews('hour'), H(3), 10)).toBe(0);
    expect(await db.pruneBuckets({ ...ofViews('day'), counter: 'like_count' }, D(1), 10)).toBe(0);
    expect(await db.pruneBuckets(ofViews('day'), D(1), 10)).toBe(1);
    expect(await stored()).toEqual({
      [`${posts.key} view_count ${a} hour ${H(3)}`]: 4,
      [`${posts.key} view_count ${a} hour ${H(4)}`]: 5,
      [`${posts.key} view_count ${a} day ${D(1)}`]: 20,
    });
  });
});
