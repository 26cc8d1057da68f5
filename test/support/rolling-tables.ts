import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { CounterBucket, CounterRollingSum, CounterRollingWindow } from '../../lib/index.js';
import type { CountedEntity, CounterField } from '../../lib/model/counted-entity.js';
import type { DeltaBatch } from '../../lib/model/delta-batch.js';
import type { Granularity } from '../../lib/model/time-bucket.js';
import { insideOneHour } from './one-hour.js';

export const HOUR = 3_600;
export const DAY = 86_400;

/** A bucket change: the row, the bucket's granularity and start (Unix seconds), the change. */
export type Place = [id: string | number, granularity: Granularity, start: number, delta: number];

/** A hand-made batch of one counter: each row's total change is the sum of its changes in `places` by hour. */
export function bucketBatch(entity: CountedEntity, counter: CounterField, places: Place[], shard = 0): DeltaBatch {
  const totals = new Map<string | number, number>();
  for (const [id, granularity, , delta] of places) {
    if (granularity === counter.windows[0]) totals.set(id, (totals.get(id) ?? 0) + delta);
  }
  return {
    batchId: randomUUID(),
    entity,
    shard,
    counters: [counter],
    rows: { ids: [...totals.keys()], deltas: [...totals.values()] },
    buckets: bucketDeltasOf(counter, places),
  };
}

/** `places` as a batch's bucket deltas, all of `counter`. */
export function bucketDeltasOf(counter: CounterField, places: Place[]): NonNullable<DeltaBatch['buckets']> {
  return {
    ids: places.map(([id]) => id),
    counters: places.map(() => counter),
    granularities: places.map(([, granularity]) => granularity),
    starts: places.map(([, , start]) => start),
    deltas: places.map(([, , , delta]) => delta),
  };
}

/** The stored sums, as `counter window row` → value. */
export async function storedSums(dataSource: DataSource): Promise<Record<string, number>> {
  const rows = await dataSource.getRepository(CounterRollingSum).find();
  return Object.fromEntries(rows.map((row) => [`${row.counter} ${row.window} ${row.rowId}`, Number(row.value)]));
}

/** The stored windows' starts, as `counter window` → from. */
export async function storedStarts(dataSource: DataSource): Promise<Record<string, number>> {
  const rows = await dataSource.getRepository(CounterRollingWindow).find();
  return Object.fromEntries(rows.map((row) => [`${row.counter} ${row.window}`, Number(row.from)]));
}

/** Empties the bucket and rolling tables. */
export async function clearWindowTables(dataSource: DataSource): Promise<void> {
  for (const table of [CounterBucket, CounterRollingWindow, CounterRollingSum]) {
    await dataSource.getRepository(table).clear();
  }
}

/** Waits, when the hour ends within `marginMs`, until it has: a test that reads the clock twice sees one hour. */
export function awayFromHourEdge(marginMs = 10_000): Promise<void> {
  return insideOneHour(marginMs);
}
