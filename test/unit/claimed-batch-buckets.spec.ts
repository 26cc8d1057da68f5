import { describe, expect, it } from 'vitest';
import { readClaimedBatch } from '../../lib/redis/claim/claimed-batch.reader.js';

const HOUR_10 = 36_000;

describe('the buckets of a claimed batch', () => {
  it('reads the buckets of the granularities each counter keeps, and gives back the others', () => {
    const entries = {
      '#id': 'batch-1',
      '1 view_count': '5',
      [`1 view_count@h${HOUR_10}`]: '2',
      '1 view_count@d0': '5',
      // A row whose total netted to zero still has its buckets.
      '2 like_count@d0': '3',
      // like_count keeps days only, share_count no buckets: another deployment's changes.
      '2 like_count@h0': '1',
      '3 share_count@d0': '1',
      '1 other_count@h0': '1',
      '4 view_count@hx': '1',
      '5 view_count@h0': '0',
    };
    const claimed = readClaimedBatch({ entries }, ['view_count@hd', 'like_count@d', 'share_count'], true);
    expect(claimed.rows).toEqual({
      encodedIds: [1, 2],
      deltas: [5, 0, 0, 0, 0, 0],
      buckets: {
        rows: [0, 0, 1],
        columns: [0, 0, 1],
        granularities: ['hour', 'day', 'day'],
        starts: [HOUR_10, 0, 0],
        deltas: [2, 5, 3],
      },
    });
    expect(claimed.unknown).toEqual([
      '2 like_count@h0',
      '1',
      '3 share_count@d0',
      '1',
      '1 other_count@h0',
      '1',
      '4 view_count@hx',
      '1',
    ]);
  });

  it('gives back every bucket where no counter keeps buckets', () => {
    const entries = { '1 view_count': '2', '1 view_count@h0': '2' };
    const claimed = readClaimedBatch({ entries }, ['view_count'], true);
    expect(claimed.rows).toEqual({ encodedIds: [1], deltas: [2] });
    expect(claimed.unknown).toEqual(['1 view_count@h0', '2']);
  });

  it('reads the buckets of string ids by their encoded ids', () => {
    const entries = { 'a%40b view_count@d86400': '-4' };
    const claimed = readClaimedBatch({ entries }, ['view_count@hd'], false);
    expect(claimed.rows).toEqual({
      encodedIds: ['a%40b'],
      deltas: [0],
      buckets: { rows: [0], columns: [0], granularities: ['day'], starts: [86_400], deltas: [-4] },
    });
  });
});
