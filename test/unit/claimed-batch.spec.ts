import { describe, expect, it } from 'vitest';
import type { CountedEntity, CounterField } from '../../lib/model/counted-entity.js';
import { toDeltaBatch } from '../../lib/flush/claimed-batch.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';

const keys = new CounterKeys('ctr', 8);
const counter = (name: string) => ({ name }) as CounterField;
const [like, view, comment] = ['like_count', 'view_count', 'comment_count'].map(counter);
const entity = (numericId: boolean) =>
  ({ key: 'article', numericId, counters: [like, view, comment] }) as CountedEntity;

// A claimed batch (ids as Redis keeps them, one delta per counter and row) becomes what the database is
// given: ids it can bind, only the counters some row changes, and the encoded id of each row whose text
// changed on the way, so that its acknowledgement names its row in Redis.
describe('a claimed batch as the database takes it', () => {
  it('binds integer ids as numbers where they are safe integers, and as text beyond', () => {
    const encodedIds = ['17', '-5', '9007199254740991', '9007199254740993', '12345678901234567890'];
    const { batch, encodedIdOf } = toDeltaBatch(keys, entity(true), 3, 'b-1', {
      encodedIds,
      deltas: encodedIds.flatMap((_, row) => [row + 1, 0, -row]),
    });
    expect(batch.rows.ids).toEqual([17, -5, 9007199254740991, '9007199254740993', '12345678901234567890']);
    expect(encodedIdOf).toEqual(new Map());
    expect(batch).toMatchObject({ batchId: 'b-1', shard: 3 });
  });

  it("binds '-0' as the number -0, and keeps its encoded id for the acknowledgement", () => {
    const { batch, encodedIdOf } = toDeltaBatch(keys, entity(true), 0, 'b-2', {
      encodedIds: ['-0', '0'],
      deltas: [1, 2, 3, 4, 5, 6],
    });
    expect(Object.is(batch.rows.ids[0], -0)).toBe(true);
    expect(Object.is(batch.rows.ids[1], 0)).toBe(true);
    expect(encodedIdOf).toEqual(new Map([['0', '-0']]));
  });

  it('decodes text ids, and keeps the encoded id of each whose text changed', () => {
    const encodedIds = [encodeURIComponent('a:{1}'), 'plain', encodeURIComponent('é')];
    const { batch, encodedIdOf } = toDeltaBatch(keys, entity(false), 1, 'b-3', {
      encodedIds,
      deltas: [1, 1, 1, 2, 2, 2, 3, 3, 3],
    });
    expect(batch.rows.ids).toEqual(['a:{1}', 'plain', 'é']);
    expect(encodedIdOf).toEqual(
      new Map([
        ['a:{1}', 'a%3A%7B1%7D'],
        ['é', '%C3%A9'],
      ]),
    );
  });

  it('keeps only the counters some row changes, each row its own deltas of them', () => {
    const { batch } = toDeltaBatch(keys, entity(true), 0, 'b-4', {
      encodedIds: ['1', '2', '3'],
      deltas: [5, 0, 0, 0, 0, -2, 7, 0, 0],
    });
    expect(batch.counters).toEqual([like, comment]);
    expect(batch.rows).toEqual({ ids: [1, 2, 3], deltas: [5, 0, 0, -2, 7, 0] });
  });

  it('keeps every counter when each is changed by some row', () => {
    const { batch } = toDeltaBatch(keys, entity(true), 0, 'b-5', {
      encodedIds: ['1', '2'],
      deltas: [1, 0, 0, 0, 2, 3],
    });
    expect(batch.counters).toEqual([like, view, comment]);
    expect(batch.rows).toEqual({ ids: [1, 2], deltas: [1, 0, 0, 0, 2, 3] });
  });
});
