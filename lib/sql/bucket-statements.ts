import type { Granularity } from '../model/time-bucket.js';
import type {
  BucketCounter,
  BucketRows,
  BucketTable,
  RollingKey,
  RollingSumRows,
  RollingTables,
} from './counter-dialect.js';

// The pieces of the bucket and rolling-sum statements that the dialects share.

/** The bucket table's columns in the order `bucketParams` gives their values: the primary key, then the value. */
export function bucketColumns(table: BucketTable): string[] {
  return [table.entity, table.counter, table.rowId, table.granularity, table.start, table.value];
}

/** The bucket table's primary key columns. */
export function bucketPrimaryKey(table: BucketTable): string {
  return bucketColumns(table).slice(0, 5).join(', ');
}

/** Buckets `from` to `to` (exclusive) as statement parameters, bucket after bucket, in `bucketColumns` order. */
export function bucketParams(buckets: BucketRows, from: number, to: number): unknown[] {
  const params: unknown[] = [];
  for (let b = from; b < to; b++) {
    params.push(
      buckets.entity,
      buckets.counters[b],
      buckets.rowIds[b],
      buckets.granularities[b],
      buckets.starts[b],
      buckets.deltas[b],
    );
  }
  return params;
}

/** The sums table's columns in the order `sumParams` gives their values: the primary key, then the value. */
export function sumColumns(tables: RollingTables): string[] {
  return [tables.entity, tables.counter, tables.window, tables.rowId, tables.value];
}

/** Sums `from` to `to` (exclusive) as statement parameters, sum after sum, in `sumColumns` order. */
export function sumParams(sums: RollingSumRows, from: number, to: number): unknown[] {
  const params: unknown[] = [];
  for (let s = from; s < to; s++)
    params.push(sums.entity, sums.counters[s], sums.windows[s], sums.rowIds[s], sums.deltas[s]);
  return params;
}

/**
 * The values of `addBucketSums`'s statement, in the order of its text for the dialects with `?`: the
 * window's key (the sums' columns), then the buckets' entity, counter, granularity and range.
 */
export function bucketSumParams(
  key: RollingKey,
  granularity: Granularity,
  range: { from: number; to: number },
): unknown[] {
  return [key.entity, key.counter, key.window, key.entity, key.counter, granularity, range.from, range.to];
}

/**
 * `SELECT <entity> AS e, <counter> AS c, <window> AS w, row_id AS r, sign * SUM(value) AS d … GROUP BY
 * row_id` over a window's
 * buckets, the parameters written by `parameter(position)` (1-8, as `bucketSumParams` gives them).
 */
export function bucketSumsSelect(buckets: BucketTable, sign: 1 | -1, parameter: (position: number) => string): string {
  return (
    `SELECT ${parameter(1)} AS e, ${parameter(2)} AS c, ${parameter(3)} AS w, ${buckets.rowId} AS r, ` +
    `${sign < 0 ? '-' : ''}SUM(${buckets.value}) AS d FROM ${buckets.table} ` +
    `WHERE ${buckets.entity} = ${parameter(4)} AND ${buckets.counter} = ${parameter(5)} ` +
    `AND ${buckets.granularity} = ${parameter(6)} AND ${buckets.start} >= ${parameter(7)} ` +
    `AND ${buckets.start} < ${parameter(8)} GROUP BY ${buckets.rowId} HAVING SUM(${buckets.value}) <> 0`
  );
}

/** `(?, ?, ?, ?, ?, ?), …`: a VALUES list of `count` buckets, for the dialects with `?` placeholders. */
export function bucketTuples(count: number): string {
  return Array.from({ length: count }, () => '(?, ?, ?, ?, ?, ?)').join(', ');
}

/**
 * `[entity = … AND counter = … AND] granularity = …` and its values, the placeholders written by
 * `parameter(position)` from 1 on.
 */
export function bucketsOf(
  table: BucketTable,
  counter: BucketCounter,
  parameter: (position: number) => string,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const equal = (column: string, value: unknown) => {
    params.push(value);
    return `${column} = ${parameter(params.length)}`;
  };
  const conditions = counter.entity === undefined ? [] : [equal(table.entity, counter.entity)];
  if (counter.counter !== undefined) conditions.push(equal(table.counter, counter.counter));
  conditions.push(equal(table.granularity, counter.granularity));
  return { sql: conditions.join(' AND '), params };
}
