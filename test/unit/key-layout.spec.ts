import { describe, expect, it } from 'vitest';
import { CounterKeys } from '../../lib/redis/counter.keys.js';

const keys = new CounterKeys('ctr', 64);
const shardOf = (id: string | number) => keys.shardOf(keys.encodeId(String(id)));
const range = (first: number, last: number) => Array.from({ length: last - first + 1 }, (_, i) => first + i);

// Which shard a row belongs to: a hash of its whole encoded id, so that rows of any kind spread over
// every shard, and a flush's work over every flusher.
describe('the shard of a row', () => {
  it('spreads consecutive integer ids over the shards', () => {
    expect(new Set(range(0, 999).map(shardOf)).size).toBe(64);
    expect(new Set(range(1200, 1299).map(shardOf)).size).toBeGreaterThan(40);
  });

  it('spreads other ids over the shards', () => {
    expect(new Set(range(0, 99).map((i) => shardOf(`user-${i}`))).size).toBeGreaterThan(40);
    expect(new Set(range(0, 99).map((i) => shardOf(`12${i}x`))).size).toBeGreaterThan(40);
  });

  // Pinned: a release that moved rows to other shards would leave their unflushed changes where the
  // new one no longer looks when it loads a row.
  it('stays where it was', () => {
    expect(
      [
        '0',
        '99',
        '100',
        '1234',
        '-1',
        '-100',
        '12345678901234567890',
        'user-1',
        '2a1b3c4d-0000-4000-8000-000000000001',
      ].map(shardOf),
    ).toEqual([47, 55, 28, 61, 43, 35, 29, 52, 50]);
  });
});
