import type { QueryRunner } from 'typeorm';
import { bucketStart } from '../model/time-bucket.js';
import { bucketsOf } from './bucket-statements.js';
import type { BucketRows, BucketTable, CounterDialect } from './counter-dialect.js';
import { compareIds } from './merge-batches.js';

/** Hour buckets one DELETE names, at most: two parameters each. */
const DELETED_PER_STATEMENT = 200;

/** The hour buckets a roll-up takes, as the database gives them. */
interface HourBucketRow {
  r: string;
  s: string | number;
  v: string | number;
}

/**
 * Rolls at most `limit` of one counter's hour buckets that start before `before` (Unix seconds, a day's
 * start) up into its day buckets, the oldest first, in the transaction of `runner`: they are locked,
 * added to their days and deleted, so each change is in one of them at any moment. Returns how many hour
 * buckets it took.
 */
export async function rollUpHours(
  runner: QueryRunner,
  dialect: CounterDialect,
  table: BucketTable,
  key: { entity: string; counter: string },
  before: number,
  limit: number,
): Promise<number> {
  const p = (position: number) => dialect.placeholder(position);
  const ofHours = bucketsOf(table, { ...key, granularity: 'hour' }, p);
  const hours: HourBucketRow[] = await runner.query(
    `SELECT ${table.rowId} AS r, ${table.start} AS s, ${table.value} AS v FROM ${table.table} ` +
      `WHERE ${ofHours.sql} AND ${table.start} < ${p(4)} ` +
      `ORDER BY ${table.start} LIMIT ${p(5)}${dialect.forUpdate}`,
    [...ofHours.params, before, limit],
  );
  if (hours.length === 0) return 0;
  const days = daySums(key, hours);
  for (let from = 0; from < days.deltas.length; from += dialect.maxBucketsPerStatement) {
    const statement = dialect.addBuckets(
      table,
      days,
      from,
      Math.min(days.deltas.length, from + dialect.maxBucketsPerStatement),
    );
    await runner.query(statement.sql, statement.params);
  }
  for (let from = 0; from < hours.length; from += DELETED_PER_STATEMENT) {
    const some = hours.slice(from, from + DELETED_PER_STATEMENT);
    const params = [...ofHours.params];
    const named = some.map((hour) => {
      params.push(hour.r, Number(hour.s));
      return `(${table.rowId} = ${p(params.length - 1)} AND ${table.start} = ${p(params.length)})`;
    });
    await runner.query(`DELETE FROM ${table.table} WHERE ${ofHours.sql} AND (${named.join(' OR ')})`, params);
  }
  return hours.length;
}

/** The hours' values added up per row and day, in primary key order (see mergeBuckets); sums of 0 left out. */
function daySums(key: { entity: string; counter: string }, hours: HourBucketRow[]): BucketRows {
  const sums = new Map<string, { rowId: string; start: number; delta: number }>();
  for (const hour of hours) {
    const start = bucketStart('day', Number(hour.s));
    const id = `${start} ${hour.r}`;
    const sum = sums.get(id) ?? { rowId: hour.r, start, delta: 0 };
    sum.delta += Number(hour.v);
    sums.set(id, sum);
  }
  const sorted = [...sums.values()]
    .filter((sum) => sum.delta !== 0)
    .sort((a, b) => compareIds(a.rowId, b.rowId) || a.start - b.start);
  return {
    entity: key.entity,
    counters: sorted.map(() => key.counter),
    rowIds: sorted.map((sum) => sum.rowId),
    granularities: sorted.map(() => 'day'),
    starts: sorted.map((sum) => sum.start),
    deltas: sorted.map((sum) => sum.delta),
  };
}
