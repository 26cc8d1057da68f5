// Scenario 17's invariant (issue 51, G11): once everything is flushed, each hour bucket of each Clip in
// counter_bucket equals the acknowledged changes of that row in it (a bucket without any is absent or 0),
// so does each day (its day row, which holds the hours rolled up into it, plus its hour rows left), and a
// row's hours and its days each add up to its total's change (database value minus start value). Read
// through the parent's own connection, with plain TypeORM.
import { In, type DataSource } from 'typeorm';
import { CounterBucket } from '../../lib/index.js';
import { Clip } from '../worker/clip.entity.js';
import type { InvariantFigures } from './invariant.js';
import type { PeriodChanges } from './period-changes.js';

const HOUR_SECONDS = 3_600;
const DAY_SECONDS = 86_400;
const WRONG_KEPT = 10;

export interface BucketInvariantInput {
  /** A connection that has Clip and CounterBucket. */
  dataSource: DataSource;
  rowIds: number[];
  /** The rows' play_count before the scenario. */
  start: Map<number, number>;
  changes: PeriodChanges;
  /** Unix seconds at which each period's hour starts, by period. */
  hourStarts: number[];
}

export interface BucketFigures extends InvariantFigures {
  /** Row buckets compared: every row's hours and days of the periods, and any other bucket stored. */
  bucketsChecked: number;
  /** Buckets whose stored value is not the acknowledged changes in it. */
  wrongBuckets: number;
  /** Rows whose hours or days do not add up to the change of their total. */
  rowsWhoseSumsDiffer: number;
}

/** play_count of each row, by id. */
export async function readClips(dataSource: DataSource, rowIds: number[]): Promise<Map<number, number>> {
  const rows = await dataSource.getRepository(Clip).find({ where: { id: In(rowIds) } });
  return new Map(rows.map((row) => [Number(row.id), Number(row.playCount)]));
}

export async function checkBucketInvariant({
  dataSource,
  rowIds,
  start,
  changes,
  hourStarts,
}: BucketInvariantInput): Promise<BucketFigures> {
  const end = await readClips(dataSource, rowIds);
  const stored = await storedBuckets(dataSource);
  const figures: BucketFigures = {
    acknowledged: 0,
    inDatabase: 0,
    lost: 0,
    duplicated: 0,
    uncertain: changes.uncertain,
    // Decrements move values down as they should: there is no "backwards" to watch for here.
    backwards: 0,
    samples: 0,
    wrong: [],
    backwardSteps: [],
    bucketsChecked: 0,
    wrongBuckets: 0,
    rowsWhoseSumsDiffer: 0,
  };
  const note = (line: string) => figures.wrong.length < WRONG_KEPT && figures.wrong.push(line);
  /** Compares `value` (the stored bucket `key`'s unless given) with `expected`; returns it. */
  const compare = (key: string, expected: number, value = stored.get(key) ?? 0) => {
    stored.delete(key);
    figures.bucketsChecked++;
    if (value !== expected) {
      figures.wrongBuckets++;
      note(`bucket ${key}: acknowledged ${expected} ≠ ${value}`);
    }
    return value;
  };

  for (const id of rowIds) {
    const acknowledged = changes.total(id);
    const applied = end.get(id)! - start.get(id)!;
    figures.acknowledged += acknowledged;
    figures.inDatabase += applied;
    // Signed changes: a shortfall is counted as lost and a surplus as duplicated, both must be 0.
    if (applied < acknowledged) figures.lost += acknowledged - applied;
    if (applied > acknowledged) figures.duplicated += applied - acknowledged;
    if (applied !== acknowledged) note(`Clip:${id}: start ${start.get(id)} + ${acknowledged} ≠ ${end.get(id)}`);

    let hours = 0;
    /** Per day, the acknowledged changes in it and the value of its hour rows. */
    const days = new Map<number, { acknowledged: number; hours: number }>();
    hourStarts.forEach((hour, period) => {
      const change = changes.acknowledged(id, period);
      // The periods' hours are ahead of the real clock: never rolled up, each is its own row.
      const value = compare(`${id} hour ${hour}`, change);
      hours += value;
      const dayStart = Math.floor(hour / DAY_SECONDS) * DAY_SECONDS;
      const day = days.get(dayStart) ?? { acknowledged: 0, hours: 0 };
      day.acknowledged += change;
      day.hours += value;
      days.set(dayStart, day);
    });
    let daySum = 0;
    for (const [start, day] of days) {
      const key = `${id} day ${start}`;
      daySum += compare(key, day.acknowledged, (stored.get(key) ?? 0) + day.hours);
    }
    if (hours !== applied || daySum !== applied) {
      figures.rowsWhoseSumsDiffer++;
      note(`Clip:${id}: hours add up to ${hours}, days to ${daySum}, the total changed by ${applied}`);
    }
  }
  // Buckets of no period, or of rows never changed: wrong unless 0.
  for (const key of [...stored.keys()]) compare(key, 0);
  return figures;
}

/** Clip's play_count buckets in counter_bucket, by `${rowId} ${granularity} ${start}`. */
async function storedBuckets(dataSource: DataSource): Promise<Map<string, number>> {
  const entity = dataSource.getMetadata(Clip).tablePath;
  const rows = await dataSource.getRepository(CounterBucket).findBy({ entity, counter: 'play_count' });
  const buckets = new Map<string, number>();
  for (const row of rows) {
    const start = Number(row.start);
    const length = row.granularity === 'hour' ? HOUR_SECONDS : DAY_SECONDS;
    if (start % length !== 0) throw new Error(`bucket ${row.rowId} ${row.granularity} ${start} is not aligned`);
    buckets.set(`${row.rowId} ${row.granularity} ${start}`, Number(row.value));
  }
  return buckets;
}
