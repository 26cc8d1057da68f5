import { describe, expect, it } from 'vitest';
import type { CountedEntity, CounterField } from '../../lib/model/counted-entity.js';
import type { DeltaBatch } from '../../lib/model/delta-batch.js';
import { mergeBatches } from '../../lib/sql/merge-batches.js';

// A transaction writes its rows in id order, so that two flushers lock rows alike. The merge sorts
// integer ids as packed numbers: in 32 bits when they span little, in a double when they span more,
// with a comparison for anything else.
const like = { propertyName: 'likeCount' } as CounterField;
const view = { propertyName: 'viewCount' } as CounterField;
const entity = { key: 'article', counters: [like, view] } as unknown as CountedEntity;

function batch(ids: Array<string | number>, counters: CounterField[], deltas: number[]): DeltaBatch {
  return { batchId: `b-${String(ids[0])}`, entity, shard: 0, counters, rows: { ids, deltas } };
}

/** 700 distinct ids below 2,800 in a scrambled order: the even ones (parity 0) or the odd ones (1). */
function spreadIds(parity: number): number[] {
  return Array.from({ length: 700 }, (_, i) => ((i * 7_919) % 1_400) * 2 + parity);
}

describe('mergeBatches', () => {
  it.each([
    ['ids close together (a 32-bit key)', [5, 3, 1_000], [2, 999, 4]],
    ['ids far apart (a key in a double)', [2 ** 32 - 1, -(2 ** 32 - 1), 7], [-1, 1_000_000_000, 0]],
    ['ids beyond 2^32 and text (compared)', [2 ** 40, 'b', 3], ['a', -(2 ** 40), 12]],
    ['1,400 ids close together, scrambled (a 32-bit key)', spreadIds(0), spreadIds(1)],
  ])('sorts %s and keeps each row its deltas and batch', (_, first, second) => {
    const merged = mergeBatches([
      batch(
        first,
        [like, view],
        first.flatMap((_, r) => [r + 1, 10 * (r + 1)]),
      ),
      batch(
        second,
        [like, view],
        second.flatMap((_, r) => [100 + r, 1000 + r]),
      ),
    ]);
    const expected = [
      ...first.map((id, r) => ({ id, deltas: [r + 1, 10 * (r + 1)], batch: 0 })),
      ...second.map((id, r) => ({ id, deltas: [100 + r, 1000 + r], batch: 1 })),
    ].sort((a, b) =>
      typeof a.id === 'number' && typeof b.id === 'number' ? a.id - b.id : String(a.id) < String(b.id) ? -1 : 1,
    );
    expect(merged.counters).toEqual([like, view]);
    expect(merged.rows.ids).toEqual(expected.map((row) => row.id));
    expect([...merged.rows.deltas]).toEqual(expected.flatMap((row) => row.deltas));
    expect(merged.batchOfRow).toEqual(expected.map((row) => row.batch));
  });

  it('gives a column a batch does not change a 0 in its rows', () => {
    const merged = mergeBatches([batch([9, 1], [view], [5, 6]), batch([4], [like, view], [7, 8])]);
    expect(merged.counters).toEqual([like, view]);
    expect(merged.rows.ids).toEqual([1, 4, 9]);
    expect([...merged.rows.deltas]).toEqual([0, 6, 7, 8, 0, 5]);
    expect(merged.batchOfRow).toEqual([0, 1, 0]);
  });
});
