import { describe, expect, it } from 'vitest';
import calculateSlot from 'cluster-key-slot';
import { CounterKeys } from '../../lib/redis/counter.keys.js';

const keys = new CounterKeys('ctr', 64);
const shardOf = (id: string | number) => keys.shardOf(keys.encodeId(String(id)));
const range = (first: number, last: number) => Array.from({ length: last - first + 1 }, (_, i) => first + i);

// Which shard a row belongs to. Integer ids go by runs of 100 (rows with close keys are stored close
// together, so a flush transaction of a run rewrites few pages); every other id by its whole text.
describe('the shard of a row', () => {
  it('is the same for every id of a run of 100 integer ids, and differs between runs', () => {
    expect(new Set(range(1200, 1299).map(shardOf))).toEqual(new Set([shardOf(1200)]));
    expect(new Set(range(0, 99).map(shardOf))).toEqual(new Set([shardOf(0)]));
    expect(new Set(range(-99, -1).map(shardOf))).toEqual(new Set([shardOf(-1)]));
    expect(shardOf(1299)).not.toBe(shardOf(1300));
    expect(shardOf(-1)).not.toBe(shardOf(0));
    // Ids beyond JavaScript's safe integers (bigint keys, kept as text) too.
    expect(shardOf('12345678901234567801')).toBe(shardOf('12345678901234567899'));
  });

  it('spreads runs over every shard', () => {
    expect(new Set(range(0, 999).map((run) => shardOf(run * 100))).size).toBe(64);
  });

  it('goes by the whole text of ids that are not integers', () => {
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
        '0123',
        '007',
      ].map(shardOf),
    ).toEqual([5, 5, 28, 42, 56, 43, 28, 52, 50, 58, 47]);
  });

  // A string key of digits (a varchar) goes by its run too, leading zeros and all: integer keys refuse
  // '0123', so the two tests of "digits" differ (see row-id.ts).
  it('goes by the run of a string id of digits with leading zeros', () => {
    expect(shardOf('0123')).toBe(shardOf('0199'));
  });
});

// The repair keys of a deployment: one script touches both, so they share a slot (G5).
describe('the repair keys', () => {
  it('carry the key prefix and share one hash slot', () => {
    const { jobs, lease } = new CounterKeys('app', 64).repair;
    expect([jobs, lease]).toEqual(['app:{repair}:jobs', 'app:{repair}:lease']);
    expect(calculateSlot(jobs)).toBe(calculateSlot(lease));
  });
});
