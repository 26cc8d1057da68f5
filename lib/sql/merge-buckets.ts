import type { DeltaBatch } from '../model/delta-batch.js';
import { canonicalIdText } from '../model/row-id.js';
import type { BucketRows } from './counter-dialect.js';
import { compareIds } from './merge-batches.js';

/**
 * One entity's batches' bucket changes as one list in primary key order (counter, row id as text,
 * granularity, start), so that two flushers lock buckets in one order, leaving out the rows in `missing`
 * (canonical id texts: rows deleted since their counters changed). Changes of one bucket are added up,
 * though a transaction should hold none twice (one place per bucket in a batch, batches of distinct
 * shards), since PostgreSQL refuses to update a row twice in one INSERT; a bucket whose changes add up
 * to 0 is left out.
 */
export function mergeBuckets(batches: DeltaBatch[], missing: ReadonlySet<string>): BucketRows {
  const entity = batches[0].entity;
  const counters: string[] = [];
  const rowIds: string[] = [];
  const granularities: BucketRows['granularities'] = [];
  const starts: number[] = [];
  const deltas: number[] = [];
  for (const { buckets } of batches) {
    if (!buckets) continue;
    for (let place = 0; place < buckets.ids.length; place++) {
      const rowId = canonicalIdText(entity, buckets.ids[place]);
      if (missing.has(rowId)) continue;
      counters.push(buckets.counters[place].name);
      rowIds.push(rowId);
      granularities.push(buckets.granularities[place]);
      starts.push(buckets.starts[place]);
      deltas.push(buckets.deltas[place]);
    }
  }
  const order = Array.from({ length: counters.length }, (_, place) => place).sort(
    (a, b) =>
      compareIds(counters[a], counters[b]) ||
      compareIds(rowIds[a], rowIds[b]) ||
      compareIds(granularities[a], granularities[b]) ||
      starts[a] - starts[b],
  );
  const sameBucket = (a: number, b: number) =>
    counters[a] === counters[b] &&
    rowIds[a] === rowIds[b] &&
    granularities[a] === granularities[b] &&
    starts[a] === starts[b];
  const merged: BucketRows = {
    entity: entity.key,
    counters: [],
    rowIds: [],
    granularities: [],
    starts: [],
    deltas: [],
  };
  for (let sorted = 0; sorted < order.length;) {
    const first = order[sorted];
    let delta = 0;
    for (; sorted < order.length && sameBucket(order[sorted], first); sorted++) delta += deltas[order[sorted]];
    if (delta === 0) continue;
    merged.counters.push(counters[first]);
    merged.rowIds.push(rowIds[first]);
    merged.granularities.push(granularities[first]);
    merged.starts.push(starts[first]);
    merged.deltas.push(delta);
  }
  return merged;
}
