import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { rollingFrom } from '../../lib/model/rolling-window.js';
import type { BenchApp } from '../harness/bench-app.js';
import { sleep } from '../harness/closed-loop.js';
import { TopSamplePost } from './windows.entities.js';
import {
  createEventsTable,
  insertTopRows,
  seedFromEvents,
  TOP_COUNTER,
  TOP_ROLLING,
  topTables,
  type TopTables,
} from './windows-top.seed.js';

const SAMPLE_ROWS = 12;
/** Row id → how many times it is changed (+1 each): 1 to 7 times, different from row to row. */
const changesOf = (id: number) => 1 + ((id * 5) % 7);
/** Closer than this to the end of an hour, the sample waits for the next: its changes share one hour. */
const HOUR_EDGE_MS = 30_000;
const HOUR_MS = 3_600_000;

/**
 * Checks the seeding against the library itself: makes a few changes to TopSamplePost through the real
 * `increment` and `flush()`, reads what the flush wrote to the rows, buckets and rolling tables, takes it
 * out, seeds the same changes from an events table, and throws unless the two states are the same, row for
 * row. Its changes fall in the current hour (the library takes their time from the Redis server's clock);
 * the big seeding spreads its changes over hours and days with the same statements.
 */
export async function checkSeedingAgainstFlush(bench: BenchApp, inspector: Redis): Promise<void> {
  const { dataSource, counters } = bench;
  const t = topTables(dataSource, TopSamplePost, 'bench_top_sample_event');
  await insertTopRows(dataSource, t, SAMPLE_ROWS);
  const left = HOUR_MS - (Date.now() % HOUR_MS);
  if (left < HOUR_EDGE_MS) await sleep(left + 1_000);
  const [seconds] = await inspector.time();
  const changed: number[] = [];
  for (let id = 1; id <= SAMPLE_ROWS; id++) {
    for (let time = 0; time < changesOf(id); time++) {
      await counters.increment(TopSamplePost, id, TOP_COUNTER);
      changed.push(id);
    }
  }
  const report = await counters.flush();
  if (report.error) throw report.error;
  const flushed = await storedState(dataSource, t);

  await takeOut(dataSource, t);
  await createEventsTable(dataSource, t);
  await dataSource.query(
    `INSERT INTO ${t.events} (row_id, at) SELECT r, to_timestamp($2::float8) FROM unnest($1::int[]) AS u(r)`,
    [changed, Number(seconds)],
  );
  await seedFromEvents(dataSource, t, rollingFrom(TOP_ROLLING, 'hour', Date.now()));
  const seeded = await storedState(dataSource, t);
  if (seeded !== flushed)
    throw new Error(`the seeding writes\n${seeded}\nwhere increment and flush() wrote\n${flushed}`);
  await takeOut(dataSource, t);
  await dataSource.query(`DROP TABLE ${t.events}`);
}

/** The entity's rows and its buckets, rolling window and sums, one line each, in a fixed order. */
async function storedState(dataSource: DataSource, t: TopTables): Promise<string> {
  const lines = (rows: Array<Record<string, unknown>>) => rows.map((row) => Object.values(row).join(' '));
  const key = [t.entityKey, TOP_COUNTER];
  return [
    ...lines(await dataSource.query(`SELECT 'row' AS t, id, view_count FROM ${t.rows} ORDER BY id`)),
    ...lines(
      await dataSource.query(
        `SELECT 'bucket' AS t, row_id, granularity, bucket_start, value FROM ${t.buckets} ` +
          `WHERE entity = $1 AND counter = $2 ORDER BY row_id, granularity, bucket_start`,
        key,
      ),
    ),
    ...lines(
      await dataSource.query(
        `SELECT 'window' AS t, "window", "from" FROM ${t.windows} WHERE entity = $1 AND counter = $2 ORDER BY "window"`,
        key,
      ),
    ),
    ...lines(
      await dataSource.query(
        `SELECT 'sum' AS t, "window", row_id, value FROM ${t.sums} WHERE entity = $1 AND counter = $2 ` +
          `ORDER BY "window", row_id`,
        key,
      ),
    ),
  ].join('\n');
}

/** Takes the entity's changes out: counters back to 0, its buckets, window and sums deleted. */
async function takeOut(dataSource: DataSource, t: TopTables): Promise<void> {
  await dataSource.query(`UPDATE ${t.rows} SET view_count = 0`);
  for (const table of [t.buckets, t.sums, t.windows])
    await dataSource.query(`DELETE FROM ${table} WHERE entity = $1`, [t.entityKey]);
}
