// Chaos scenario 17 (issue 51): counts over time. Flushes are killed at random points while changes
// stream into 1,000 rows over several periods, each one hour of Redis's clock; in the end every hour and
// day bucket of every row equals the acknowledged changes of that row in it, and a row's hour buckets and
// its day buckets each add up to the change of its total.
//
// Redis is a server of the scenario's own whose clock the parent sets (FixedClockRedis): period p runs at
// the hour BASE + p hours, a few minutes in, BASE being chosen so that the periods cross a UTC midnight
// (two days ahead of the real clock: the day buckets split too). In each period, waves of increments and
// decrements go to the instances, a quarter of them keyed and retried with their key until they resolve,
// the others sent again while refused (a row loaded into Redis while flushes change it is refused with
// CounterSeedContentionError: nothing was applied); a wave ends when every change of it is acknowledged,
// and only then does the clock move on, so each change's buckets are known. Every instance flushes in a
// loop. Two of them take every unkeyed change and are never killed; the two others take keyed changes
// only, and during each wave one of these is SIGKILLed (at a step of the flush protocol or at a random
// moment of its flushes, by seed) and replaced by a new one. The jump of the clock to the next hour
// expires every lease at once as well: a flusher between claim and ack may then lose its shard to
// another, which finishes the batch it left.
//
// Its size, by environment variable (the defaults take 45 to 110 s on a busy two-core machine):
//   CHAOS_BUCKET_PERIODS  periods, one hour of Redis's clock each (default 4; at least 2, to cross midnight)
//   CHAOS_BUCKET_WAVES    waves of changes per period, one flusher killed during each (default 2)
//   CHAOS_BUCKET_CHANGES  changes per wave, each to a random row (default 1,000)
import { Redis } from 'ioredis';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { CounterBucket } from '../../lib/index.js';
import { FixedClockRedis } from '../../support/clock/fixed-clock-redis.js';
import { RESP2 } from '../../support/redis.js';
import { seededRandom } from '../../support/seeded-random.js';
import { checkBucketInvariant, readClips } from '../harness/bucket-invariant.js';
import { CHAOS_DATABASES, type ChaosDeployment } from '../harness/chaos-deployment.js';
import { useChaosScenario, type ChaosRun } from '../harness/chaos-scenario.js';
import type { ChaosWorker } from '../harness/chaos-worker.js';
import { changesLeft, flushUntilSettled, total } from '../harness/final-flush.js';
import { FlushLoops } from '../harness/flush-loops.js';
import { PeriodChanges } from '../harness/period-changes.js';
import { sleep, within } from '../harness/time.js';
import { Clip } from '../worker/clip.entity.js';
import { FLUSH_STEPS, type FlushStep } from '../worker/worker-protocol.js';

const PERIODS = Number(process.env.CHAOS_BUCKET_PERIODS ?? 4);
const WAVES = Number(process.env.CHAOS_BUCKET_WAVES ?? 2);
const CHANGES_PER_WAVE = Number(process.env.CHAOS_BUCKET_CHANGES ?? 1_000);
const ROWS = 1_000;
/** Small batches, so that a shard often has several and its lease is held between them ('holding-lease'). */
const FLUSH_BATCH_SIZE = 25;
const FLUSHERS = 2;
/** Each instance's pause between two flushes. */
const FLUSH_PAUSE_MS = 100;
const CALLERS = 12;
const KEYED_SHARE = 0.25;
/** Signed, mostly increments: a decrement of 2 comes as often as an increment of 2 or 3. */
const DELTAS = [-2, -1, 1, 1, 2, 3];
/** How far into its hour each period starts: the period's waves end long before the hour does. */
const MINUTES_INTO_HOUR = 5;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The kill comes this long after its wave starts, at most, then waits for its step. */
const KILL_WITHIN_MS = 400;
const STEP_WAIT_MS = 3_000;
/** A kill at a moment: this long at most after it is due, whatever the flush is doing. */
const MOMENT_WITHIN_MS = 150;
const KILL_POINTS = [...(Object.keys(FLUSH_STEPS) as FlushStep[]), 'moment'] as const;
/** Where a flusher died: a step, a moment, or (a step it did not reach in time) a moment too. */
type KillPoint = (typeof KILL_POINTS)[number] | `${FlushStep} not reached`;

if (!(PERIODS >= 2 && WAVES >= 1 && CHANGES_PER_WAVE >= 1))
  throw new Error('CHAOS_BUCKET_PERIODS must be at least 2, CHAOS_BUCKET_WAVES and CHAOS_BUCKET_CHANGES at least 1');

/** The instances that are killed in turn and replaced, each flushing in a loop while it lives. */
class KilledFlushers {
  readonly live: ChaosWorker[] = [];
  readonly killedAt = new Map<KillPoint, number>();
  private started = 0;
  private readonly replacements = new Set<Promise<void>>();

  constructor(
    private readonly deployment: ChaosDeployment,
    private readonly loops: FlushLoops,
    private readonly random: () => number,
  ) {}

  async start(count: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => this.startOne()));
  }

  /** SIGKILLs one live flusher at a random point of its flushes, and starts its replacement. */
  async killOne(): Promise<void> {
    await sleep(this.random() * KILL_WITHIN_MS);
    while (this.live.length === 0) await within(Promise.race(this.replacements), 30_000, 'a flusher replacing one');
    const victim = this.live.splice(Math.floor(this.random() * this.live.length), 1)[0];
    let point: KillPoint = KILL_POINTS[Math.floor(this.random() * KILL_POINTS.length)];
    if (point === 'moment') await sleep(this.random() * MOMENT_WITHIN_MS);
    else {
      await victim.pauseAt(point);
      const reached = await within(victim.reached(point), STEP_WAIT_MS, point).catch(() => undefined);
      if (!reached) point = `${point} not reached`;
    }
    await victim.signal('SIGKILL');
    this.killedAt.set(point, (this.killedAt.get(point) ?? 0) + 1);
    const replacement = this.startOne().finally(() => this.replacements.delete(replacement));
    this.replacements.add(replacement);
  }

  /** Waits for the replacements still booting. */
  async settle(): Promise<void> {
    await Promise.all(this.replacements);
  }

  private async startOne(): Promise<void> {
    const worker = await this.deployment.startWorker({ name: `flusher-${++this.started}`, windowed: true });
    this.live.push(worker);
    this.loops.add(worker);
  }
}

describe.each(CHAOS_DATABASES)('scenario 17: flushes of hourly and daily buckets killed, on %s', (databaseName) => {
  const scenario = useChaosScenario(databaseName);

  it(`${PERIODS} periods of ${WAVES} × ${CHANGES_PER_WAVE} changes into ${ROWS} rows: every bucket exact`, async () => {
    const clock = await FixedClockRedis.start();
    let run: ChaosRun;
    try {
      run = await scenario.deploy('s17', { redis: clock.url, flushBatchSize: FLUSH_BATCH_SIZE });
    } catch (error) {
      await clock.stop();
      throw error;
    }
    const { deployment, seed } = run;
    const inspector = new Redis(clock.url, RESP2);
    deployment.onClose(() => clock.stop());
    deployment.onClose(() => inspector.disconnect());
    const clips = await new DataSource({
      ...deployment.database.options,
      entities: [Clip, CounterBucket],
      synchronize: true,
      logging: false,
    } as DataSourceOptions).initialize();
    deployment.onClose(() => clips.destroy());

    // The periods' hours, in Unix seconds: half before the midnight that starts the day after tomorrow.
    const midnight = Math.ceil(Date.now() / DAY_MS) * DAY_MS + DAY_MS;
    const hourStarts = Array.from(
      { length: PERIODS },
      (_, period) => (midnight + (period - Math.floor(PERIODS / 2)) * HOUR_MS) / 1_000,
    );
    const enterPeriod = (period: number) =>
      clock.shiftTime(hourStarts[period] * 1_000 + MINUTES_INTO_HOUR * 60_000 - Date.now());
    enterPeriod(0);

    const rowIds = Array.from({ length: ROWS }, (_, index) => index + 1);
    await clips.getRepository(Clip).insert(rowIds.map((id) => ({ id, playCount: 1_000 + ((id * 7) % 11) })));
    const start = await readClips(clips, rowIds);
    const random = seededRandom(seed);
    const takers = await deployment.startWorkers(['taker-1', 'taker-2'], { windowed: true });
    const loops = new FlushLoops(FLUSH_PAUSE_MS);
    for (const taker of takers) loops.add(taker);
    const flushers = new KilledFlushers(deployment, loops, random);
    await flushers.start(FLUSHERS);
    const changes = new PeriodChanges('Clip', 'play_count', PERIODS);
    const everyInstance = () => [...takers, ...flushers.live];

    let sent = 0;
    const wave = async (period: number) => {
      let left = CHANGES_PER_WAVE;
      const caller = async () => {
        while (left > 0) {
          left--;
          const rowId = rowIds[Math.floor(random() * ROWS)];
          const delta = DELTAS[Math.floor(random() * DELTAS.length)];
          if (random() < KEYED_SHARE) {
            await changes.changeWithRetries(everyInstance, rowId, delta, period, `change-${sent++}`, random);
          } else {
            await changes.change(takers[Math.floor(random() * takers.length)], rowId, delta, period);
          }
        }
      };
      await Promise.all([...Array.from({ length: CALLERS }, caller), flushers.killOne()]);
    };

    const waveMs: number[] = [];
    for (let period = 0; period < PERIODS; period++) {
      if (period > 0) enterPeriod(period);
      for (let index = 0; index < WAVES; index++) {
        const began = Date.now();
        await wave(period);
        waveMs.push(Date.now() - began);
      }
    }

    const settling = Date.now();
    await flushers.settle();
    const loopReports = await loops.stop();
    const final = await flushUntilSettled(takers[0], inspector, deployment.prefix);
    const settleMs = Date.now() - settling;
    const figures = await checkBucketInvariant({ dataSource: clips, rowIds, start, changes, hourStarts });
    const leftInRedis = await changesLeft(inspector, deployment.prefix);
    const reports = [...loopReports, ...final];
    const details = {
      seed,
      periods: PERIODS,
      waves: WAVES,
      rows: ROWS,
      from: new Date(hourStarts[0] * 1_000).toISOString().slice(0, 16),
      changes: changes.calls.acknowledged,
      keyedChanges: changes.keyedChanges,
      refusedAttempts: changes.attempts.refused,
      uncertainAttempts: changes.attempts.uncertain,
      errors: [...changes.errors].map(([name, count]) => `${name}×${count}`).join(','),
      bucketsChecked: figures.bucketsChecked,
      wrongBuckets: figures.wrongBuckets,
      rowsWhoseSumsDiffer: figures.rowsWhoseSumsDiffer,
      kills: [...flushers.killedAt].map(([point, count]) => `${point}×${count}`).join(','),
      batches: total(reports, 'batches'),
      recoveredBatches: total(reports, 'recoveredBatches'),
      flushErrors: reports.filter((report) => report.error).length,
      ledgerRows: await deployment.ledgerRows(),
      waveMs: waveMs.join(','),
      settleMs,
    };
    const { bucketsChecked: _checked, wrongBuckets: _wrong, rowsWhoseSumsDiffer: _differ, ...invariant } = figures;
    run.record('17 flushes of buckets killed', invariant, details);

    expect(figures.wrong).toEqual([]);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, uncertain: 0, wrongBuckets: 0, rowsWhoseSumsDiffer: 0 });
    expect(figures.inDatabase).toBe(figures.acknowledged);
    expect(figures.bucketsChecked).toBeGreaterThanOrEqual(ROWS * (PERIODS + 2));
    expect(changes.calls.uncertain, JSON.stringify([...changes.firstMessages])).toBe(0);
    expect(changes.calls.acknowledged).toBe(PERIODS * WAVES * CHANGES_PER_WAVE);
    expect(leftInRedis, 'changes Redis still holds').toEqual([]);
    expect(final.filter((report) => report.error).map((report) => report.error!.message)).toEqual([]);
  });
});
