import type { DataSource } from 'typeorm';
import { CounterBucket, CounterRollingSum, CounterRollingWindow } from '../../lib/index.js';

/** The counter the `top` part ranks by, and the rolling window it declares. */
export const TOP_COUNTER = 'view_count';
export const TOP_WINDOW = '24h';
export const TOP_ROLLING = { name: TOP_WINDOW, seconds: 24 * 3_600 };

/**
 * Rows are drawn by rank, log-uniformly (Zipf with exponent 1: rank k gets about changes / (k · ln rows)),
 * then scattered over the ids by this multiplier, so that the top rows are not ids 1..100. Prime, so
 * that it permutes the ids for any row count it does not divide.
 */
const SCATTER = 7_919;
/** Seeds of the two hashes that draw a change's rank and its time. */
const RANK_SEED = 51;
const TIME_SEED = 52;

/** The tables of one counted entity, quoted: its rows, its events, and the library's shared tables. */
export interface TopTables {
  /** The entity's table path as the library keys its buckets and sums (CountedEntity.key). */
  entityKey: string;
  rows: string;
  events: string;
  buckets: string;
  sums: string;
  windows: string;
}

/** A deterministic set of changes: `changes` of +1 over rows 1..`rows`, at times in [from, to) (Unix s). */
export interface ChangePlan {
  rows: number;
  changes: number;
  fromSeconds: number;
  toSeconds: number;
}

/** The tables of `entity`, with an events table named `eventsTable` in the entity's schema. */
export function topTables(dataSource: DataSource, entity: new () => unknown, eventsTable: string): TopTables {
  const quoted = (path: string) =>
    path
      .split('.')
      .map((part) => dataSource.driver.escape(part))
      .join('.');
  const path = (target: new () => unknown) => dataSource.getMetadata(target).tablePath;
  const { schema } = dataSource.getMetadata(entity);
  return {
    entityKey: path(entity),
    rows: quoted(path(entity)),
    events: quoted(schema ? `${schema}.${eventsTable}` : eventsTable),
    buckets: quoted(path(CounterBucket)),
    sums: quoted(path(CounterRollingSum)),
    windows: quoted(path(CounterRollingWindow)),
  };
}

/** Inserts rows 1..count, their counter at 0. */
export async function insertTopRows(dataSource: DataSource, t: TopTables, count: number): Promise<void> {
  await dataSource.query(`INSERT INTO ${t.rows} (id) SELECT generate_series(1, $1::int)`, [count]);
}

/** Creates the events table: one row per change, the id of the row it changed and when. */
export async function createEventsTable(dataSource: DataSource, t: TopTables): Promise<void> {
  await dataSource.query(`CREATE TABLE ${t.events} (row_id int NOT NULL, at timestamptz NOT NULL)`);
}

/**
 * Writes the plan's changes into the events table on the server (drawn from hashes of their sequence
 * number, so every run writes the same), in time order as an append-only log would hold them; then its
 * index on (at, row_id), which covers the ranking query, and VACUUM ANALYZE for the planner and the
 * visibility map that an index-only scan needs.
 */
export async function writeEvents(dataSource: DataSource, t: TopTables, plan: ChangePlan): Promise<void> {
  if (plan.rows % SCATTER === 0) throw new Error(`${plan.rows} rows: ${SCATTER} would not scatter them`);
  const uniform = (seed: number) => `hashint8extended(g, ${seed})::float8 / 18446744073709551616.0 + 0.5`;
  await dataSource.query(
    `INSERT INTO ${t.events} (row_id, at) ` +
      `SELECT (least(floor(exp(u1 * ln($1::float8))), $1::float8)::bigint - 1) * ${SCATTER} % $1::int + 1, ` +
      `to_timestamp($3::float8 + u2 * ($4::float8 - $3::float8)) ` +
      `FROM (SELECT ${uniform(RANK_SEED)} AS u1, ${uniform(TIME_SEED)} AS u2 ` +
      `FROM generate_series(1, $2::bigint) AS g) AS drawn ORDER BY 2`,
    [plan.rows, plan.changes, plan.fromSeconds, plan.toSeconds],
  );
  await indexEvents(dataSource, t);
}

/** The events table's index, and VACUUM ANALYZE. */
export async function indexEvents(dataSource: DataSource, t: TopTables): Promise<void> {
  await dataSource.query(`CREATE INDEX ON ${t.events} (at, row_id)`);
  await dataSource.query(`VACUUM ANALYZE ${t.events}`);
}

/**
 * Writes what the flush would have left after the events' changes (each +1, made through `increment`
 * and flushed): the rows' totals, a bucket per row and hour that had changes (the flush writes hours only;
 * days are rolled up from them once they are past their retention, which none of a day of changes is),
 * the rolling window's row starting at `windowFrom` (Unix s), and each row's sum of its hour buckets from
 * there on. The library's tables must hold nothing of this entity yet.
 */
export async function seedFromEvents(dataSource: DataSource, t: TopTables, windowFrom: number): Promise<void> {
  const ofCounter = `entity = $1 AND counter = $2`;
  const key = [t.entityKey, TOP_COUNTER];
  await dataSource.query(
    `UPDATE ${t.rows} AS r SET view_count = r.view_count + c.n ` +
      `FROM (SELECT row_id, COUNT(*) AS n FROM ${t.events} GROUP BY row_id) AS c WHERE r.id = c.row_id`,
  );
  const columns = 'entity, counter, row_id, granularity, bucket_start, value';
  await dataSource.query(
    `INSERT INTO ${t.buckets} (${columns}) SELECT $1, $2, row_id::text, 'hour', start, COUNT(*) ` +
      `FROM (SELECT row_id, floor(extract(epoch FROM at) / 3600)::bigint * 3600 AS start FROM ${t.events}) AS e ` +
      `GROUP BY row_id, start`,
    key,
  );
  await dataSource.query(`INSERT INTO ${t.windows} (entity, counter, "window", "from") VALUES ($1, $2, $3, $4)`, [
    ...key,
    TOP_WINDOW,
    windowFrom,
  ]);
  await dataSource.query(
    `INSERT INTO ${t.sums} (entity, counter, "window", row_id, value) SELECT entity, counter, $3, row_id, SUM(value) ` +
      `FROM ${t.buckets} WHERE ${ofCounter} AND granularity = 'hour' AND bucket_start >= $4 ` +
      `GROUP BY entity, counter, row_id HAVING SUM(value) <> 0`,
    [...key, TOP_WINDOW, windowFrom],
  );
  // As autovacuum would have left them, and as the events table is.
  for (const table of [t.rows, t.buckets, t.sums, t.windows]) await dataSource.query(`VACUUM ANALYZE ${table}`);
}

/**
 * Throws unless the seeded state adds up: `changes` events, totals, hour buckets and rolling sums that
 * each add up to them, no day buckets, and (the rolling tables' invariant) every row's sum equal to its hour
 * buckets from the window's start on.
 */
export async function checkSeededState(dataSource: DataSource, t: TopTables, changes: number): Promise<void> {
  const key = [t.entityKey, TOP_COUNTER];
  const one = async (sql: string, params: unknown[] = []) =>
    Number(((await dataSource.query(sql, params)) as Array<{ n: string | number | null }>)[0]?.n ?? 0);
  const figures: Record<string, number> = {
    events: await one(`SELECT COUNT(*) AS n FROM ${t.events}`),
    totals: await one(`SELECT SUM(view_count) AS n FROM ${t.rows}`),
    'hour buckets': await one(
      `SELECT SUM(value) AS n FROM ${t.buckets} WHERE entity = $1 AND counter = $2 AND granularity = 'hour'`,
      key,
    ),
    'rolling sums': await one(
      `SELECT SUM(value) AS n FROM ${t.sums} WHERE entity = $1 AND counter = $2 AND "window" = $3`,
      [...key, TOP_WINDOW],
    ),
  };
  for (const [name, value] of Object.entries(figures)) {
    if (value !== changes) throw new Error(`seeded ${name} add up to ${value}, expected ${changes}`);
  }
  const days = await one(
    `SELECT COUNT(*) AS n FROM ${t.buckets} WHERE entity = $1 AND counter = $2 AND granularity = 'day'`,
    key,
  );
  if (days !== 0) throw new Error(`seeded ${days} day buckets, expected none`);
  const unequal = await one(
    `SELECT COUNT(*) AS n FROM (SELECT row_id, SUM(b.value) AS v FROM ${t.buckets} AS b ` +
      `JOIN ${t.windows} AS w ON w.entity = b.entity AND w.counter = b.counter AND w."window" = $3 ` +
      `WHERE b.entity = $1 AND b.counter = $2 AND b.granularity = 'hour' AND b.bucket_start >= w."from" ` +
      `GROUP BY row_id HAVING SUM(b.value) <> 0) AS b ` +
      `FULL JOIN (SELECT row_id, value AS v FROM ${t.sums} WHERE entity = $1 AND counter = $2 AND "window" = $3) AS s ` +
      `USING (row_id) WHERE b.v IS DISTINCT FROM s.v`,
    [...key, TOP_WINDOW],
  );
  if (unequal !== 0) throw new Error(`${unequal} rolling sums differ from their rows' hour buckets in the window`);
}
