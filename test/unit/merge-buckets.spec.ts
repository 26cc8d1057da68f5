import { describe, expect, it } from 'vitest';
import type { CountedEntity, CounterField } from '../../lib/model/counted-entity.js';
import type { DeltaBatch } from '../../lib/model/delta-batch.js';
import type { Granularity } from '../../lib/model/time-bucket.js';
import { mergeBuckets } from '../../lib/sql/merge-buckets.js';

// A transaction writes an entity's buckets in primary key order (counter, row id as text, granularity,
// start), so that two flushers lock them alike, and each bucket once: PostgreSQL refuses an INSERT that
// updates one row twice.
const likes = { name: 'like_count' } as CounterField;
const views = { name: 'view_count' } as CounterField;
const entity = { key: 'article', uuidId: false } as unknown as CountedEntity;
const badges = { key: 'badge', uuidId: true } as unknown as CountedEntity;

type Place = [id: string | number, counter: CounterField, granularity: Granularity, start: number, delta: number];

function batch(places: Place[], of = entity): DeltaBatch {
  return {
    batchId: 'b',
    entity: of,
    shard: 0,
    counters: [likes, views],
    rows: { ids: [], deltas: [] },
    buckets: {
      ids: places.map(([id]) => id),
      counters: places.map(([, counter]) => counter),
      granularities: places.map(([, , granularity]) => granularity),
      starts: places.map(([, , , start]) => start),
      deltas: places.map(([, , , , delta]) => delta),
    },
  };
}

describe('mergeBuckets', () => {
  it('orders buckets by counter, row id text, granularity and start', () => {
    const merged = mergeBuckets(
      [
        batch([
          [9, views, 'hour', 7_200, 1],
          [10, views, 'hour', 3_600, 2],
          [9, likes, 'hour', 3_600, 3],
        ]),
        batch([
          [9, views, 'day', 0, 4],
          [9, views, 'hour', 3_600, 5],
        ]),
      ],
      new Set(),
    );
    expect(merged).toEqual({
      entity: 'article',
      counters: ['like_count', 'view_count', 'view_count', 'view_count', 'view_count'],
      rowIds: ['9', '10', '9', '9', '9'],
      granularities: ['hour', 'hour', 'day', 'hour', 'hour'],
      starts: [3_600, 3_600, 0, 3_600, 7_200],
      deltas: [3, 2, 4, 5, 1],
    });
  });

  it('adds up the changes of one bucket and leaves out those adding up to 0', () => {
    const merged = mergeBuckets(
      [
        batch([
          [1, views, 'hour', 0, 2],
          [2, views, 'hour', 0, 4],
        ]),
        batch([
          [1, views, 'hour', 0, 3],
          [2, views, 'hour', 0, -4],
        ]),
        batch([[1, views, 'hour', 0, -1]]),
      ],
      new Set(),
    );
    expect(merged).toMatchObject({ rowIds: ['1'], starts: [0], deltas: [4] });
  });

  it('leaves out the rows that are gone, by canonical id text', () => {
    const upper = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11';
    const lower = upper.toLowerCase();
    const merged = mergeBuckets(
      [
        batch(
          [
            [upper, views, 'day', 0, 1],
            ['b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', views, 'day', 0, 2],
          ],
          badges,
        ),
      ],
      new Set([lower]),
    );
    expect(merged).toMatchObject({ entity: 'badge', rowIds: ['b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'], deltas: [2] });
  });

  it('gives no bucket for batches without any', () => {
    const plain: DeltaBatch = { ...batch([]), buckets: undefined };
    expect(mergeBuckets([plain], new Set()).deltas).toEqual([]);
  });
});
