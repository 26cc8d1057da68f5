import { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { COUNTER_DEFAULTS, DEFAULT_FLUSH_BATCH_SIZE } from '../../lib/counter.constants.js';
import { sqliteDialect } from '../../lib/sql/sqlite.dialect.js';
import type { CounterService } from '../../lib/index.js';
import type { BenchContext, BenchScenario } from '../harness/bench-context.js';
import { insertRows, loadIntoRedis, startBenchApp, type BenchApp } from '../harness/bench-app.js';
import { atLeast, ratio, type BenchRow } from '../harness/bench-results.js';
import { BULK_CHUNK_ROWS, runBulkAdd } from '../harness/bulk-update.js';
import { withDatabase, type DatabaseName } from '../harness/databases.js';
import { sleep } from '../harness/closed-loop.js';
import { eventLoopCpu, eventLoopRunQueueWait } from '../harness/event-loop-cpu.js';
import {
  bulkTargetOf,
  flushWorkload,
  makeDirty,
  verifyTotals,
  type EntityWorkload,
} from '../harness/flush-workload.js';
import { benchPrefix, deleteKeys, REDIS_URL, RESP2 } from '../harness/redis-targets.js';
import { commandCount } from '../harness/redis-command-cost.js';
import { redisProcessCpu } from '../harness/redis-process-cpu.js';
import { entityKeyRenamer, restoreKeys, snapshotKeys, type RedisSnapshot } from '../harness/redis-snapshot.js';
import { STATEMENT_TIMING_OPTIONS, StatementLog } from '../harness/statement-log.js';

const DATABASES: Array<{ name: DatabaseName; label: string }> = [
  { name: 'postgres', label: 'PostgreSQL' },
  { name: 'mariadb', label: 'MariaDB' },
  { name: 'sqlite', label: 'SQLite' },
];

/** Increments in flight while the rows are made dirty (setup, not measured). */
const SETUP_IN_FLIGHT = 200;

/**
 * The flush's target against the bulk UPDATE: 0.7×, and 0.6× on SQLite, whose statements better-sqlite3
 * runs on Node's own thread, which the flush shares with its Redis work.
 */
const flushTarget = (label: string) => (label.startsWith('SQLite') ? 0.6 : 0.7);

/**
 * Rows per insert: TypeORM reads the inserted rows' defaults back with one `id = ? OR …` per row, and
 * SQLite refuses an expression deeper than 1,000.
 */
const INSERT_CHUNK: Record<DatabaseName, number> = { postgres: 1_000, mariadb: 1_000, sqlite: 500 };

/** A flush that still leaves rows behind after this many calls is broken, not slow. */
const MAX_FLUSH_CALLS = 20;

/** The event loop thread's CPU time so far, µs; undefined off Linux. */
const mainThreadCpu = eventLoopCpu();
/** The time the event loop thread has waited for a CPU so far, µs; undefined off Linux. */
const mainThreadWait = eventLoopRunQueueWait();

/**
 * Runs of each side per database; each side is judged by its fastest. Three, not two: a process's first
 * flushes run code V8 has not optimized yet, and its compiler threads take the second core from Redis
 * (scratch copies of the SQLite scenario, flushes one after another: 28 TurboFan compilations in the
 * first, 13–14 in the second with V8's helper threads at 40–47 ms of CPU, 8–14 from the third on with
 * 7–37 ms). An app's flush, which runs every second, is past that; the bulk UPDATE gets the same number
 * of tries.
 */
const RUNS_PER_SIDE = 3;

/**
 * A pause before each timed run, either side's: the untimed work before it (the totals checked, Redis
 * restored) leaves V8's compiler threads busy for a while, and their work is not the run's. The check
 * of the totals is compiled again after each run (a deoptimization each time, `--trace-opt`): 17-35 ms
 * of a compiler thread, started just before a flush's timed run (a bulk UPDATE's comes after Redis's
 * restore, which takes a second).
 */
const SETTLE_MS = 100;

interface FlushRun {
  seconds: number;
  calls: number;
  batches: number;
  rows: number;
}

/** `flush()` until Redis holds nothing for the database; only the flush calls are timed. */
async function flushUntilEmpty(counters: CounterService): Promise<FlushRun> {
  const run: FlushRun = { seconds: 0, calls: 0, batches: 0, rows: 0 };
  for (;;) {
    if (run.calls >= MAX_FLUSH_CALLS) throw new Error(`rows still pending after ${MAX_FLUSH_CALLS} flush calls`);
    const started = performance.now();
    const report = await counters.flush();
    run.seconds += (performance.now() - started) / 1000;
    run.calls++;
    if (report.error) throw report.error;
    run.batches += report.batches;
    run.rows += report.rows;
    if ((await counters.status()).pendingRows === 0) return run;
  }
}

interface MeasuredFlush extends FlushRun {
  /** Statements the flush sent and their time inside the driver, summed over connections. */
  sql: { statements: number; seconds: number };
  /** Redis's own time in scripts (claim, ack, status) during the flush, µs. */
  redisUsec: number;
  /** CPU time of the Redis server process (all its threads) during the flush, µs (NaN where it cannot be read). */
  redisCpuUsec: number;
  /** CPU time of this process (the app: JavaScript and drivers) during the flush, µs. */
  appCpuUsec: number;
  /** CPU time of its event loop thread alone, µs (NaN where it cannot be read). */
  eventLoopCpuUsec: number;
  /** Time its event loop thread was ready to run but had no CPU, µs (NaN where it cannot be read). */
  eventLoopWaitUsec: number;
}

/** How much `reader` (a running total, µs) has grown since this call, when asked; NaN where there is no reader. */
function since(reader: (() => number) | undefined): () => number {
  const before = reader?.() ?? 0;
  return () => (reader ? reader() - before : Number.NaN);
}

/** One library run: every dirty row flushed, with the statements and Redis time it took. */
async function measureFlush(
  bench: BenchApp,
  timer: StatementLog,
  state: DirtyState,
  total: number,
): Promise<MeasuredFlush> {
  const pending = (await bench.counters.status()).pendingRows;
  if (pending !== total) throw new Error(`${pending} rows pending in Redis, expected ${total}`);
  await sleep(SETTLE_MS);
  timer.take();
  const scriptsBefore = await commandCount(state.inspector, 'evalsha');
  const cpuBefore = process.cpuUsage();
  const loopCpu = since(mainThreadCpu);
  const loopWait = since(mainThreadWait);
  const redisCpu = since(state.redisCpu);
  const flush = await flushUntilEmpty(bench.counters);
  const cpu = process.cpuUsage(cpuBefore);
  const eventLoopCpuUsec = loopCpu();
  const eventLoopWaitUsec = loopWait();
  // The acks' UNLINKs return before Redis's lazy-free thread has freed the batches: its work counts too.
  await lazyFreeDone(state.inspector);
  const redisCpuUsec = redisCpu();
  const sql = timer.take();
  const scriptsAfter = await commandCount(state.inspector, 'evalsha');
  if (flush.rows !== total) throw new Error(`the flush reported ${flush.rows} rows, expected ${total}`);
  return {
    ...flush,
    sql,
    redisUsec: scriptsAfter.usec - scriptsBefore.usec,
    redisCpuUsec,
    appCpuUsec: cpu.user + cpu.system,
    eventLoopCpuUsec,
    eventLoopWaitUsec,
  };
}

/** Waits (up to a second) until Redis's lazy-free thread has nothing left to free. */
async function lazyFreeDone(inspector: Redis): Promise<void> {
  for (let waited = 0; waited < 1_000; waited += 5) {
    const pending = /lazyfree_pending_objects:(\d+)/.exec(await inspector.info('memory'))?.[1];
    if (pending === undefined || pending === '0') return;
    await sleep(5);
  }
}

const fastest = <T extends { seconds: number }>(runs: T[]): T =>
  runs.reduce((best, run) => (run.seconds < best.seconds ? run : best));

/** Every workload row through the hand-written bulk UPDATE; seconds, statements and the event loop thread's CPU time. */
async function bulkAdd(name: DatabaseName, dataSource: DataSource, workloads: EntityWorkload[]) {
  let statements = 0;
  await sleep(SETTLE_MS);
  const loopCpu = since(mainThreadCpu);
  const loopWait = since(mainThreadWait);
  const started = performance.now();
  for (const { entity, rows } of workloads) {
    statements += await runBulkAdd(name, dataSource, bulkTargetOf(dataSource, entity), rows);
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    seconds,
    statements,
    eventLoopCpuUsec: loopCpu(),
    eventLoopWaitUsec: loopWait(),
  };
}

interface DirtyState {
  prefix: string;
  workloads: EntityWorkload[];
  inspector: Redis;
  /** The Redis server's CPU time so far, µs; undefined where its process cannot be read. */
  redisCpu?: () => number;
  /** Redis after the first database's setup: every row loaded and dirty, nothing flushed yet. */
  snapshot?: RedisSnapshot;
  /** The entity keys (table paths) the snapshot's keys were made for. */
  snapshotEntityKeys?: string[];
}

/**
 * The first database gets the whole setup (load into Redis, increments); the others get a copy of the
 * Redis keys it left, which is the same state without another minute of increments.
 */
async function makeEveryRowDirty(bench: BenchApp, state: DirtyState): Promise<string> {
  const entityKeys = state.workloads.map(({ entity }) => bench.dataSource.getMetadata(entity).tablePath);
  if (state.snapshot && state.snapshotEntityKeys) {
    const rename = entityKeyRenamer(state.prefix, COUNTER_DEFAULTS.shards, state.snapshotEntityKeys, entityKeys);
    // A shard's generation stays as the last flush left it: it only grows, and one put back to an older
    // value reads as Redis having lost the shard's data (the flusher logs an error for each such flush).
    await restoreKeys(state.inspector, state.snapshot, rename, (key) => key.endsWith(':gen'));
    return `${state.snapshot.keys.length} Redis keys restored from the first database's setup`;
  }
  for (const { entity, rows } of state.workloads) await loadIntoRedis(bench.counters, entity, rows.length);
  const increments = await makeDirty(bench.counters, state.workloads, SETUP_IN_FLIGHT);
  state.snapshot = await snapshotKeys(state.inspector, state.prefix);
  state.snapshotEntityKeys = entityKeys;
  return `${increments} increments`;
}

async function measureDatabase(
  context: BenchContext,
  name: DatabaseName,
  label: string,
  state: DirtyState,
): Promise<BenchRow> {
  const { workloads } = state;
  const total = workloads.reduce((sum, { rows }) => sum + rows.length, 0);
  return withDatabase(name, async (database) => {
    const timer = new StatementLog();
    const bench = await startBenchApp({
      database: { ...database.options, ...STATEMENT_TIMING_OPTIONS },
      logger: timer,
      topology: 'standalone',
      keyPrefix: state.prefix,
      // The scheduled flush is off so that the measured flush finds the whole backlog waiting.
      counter: { flushEnabled: false },
    });
    try {
      const setupStarted = performance.now();
      for (const { entity, rows } of workloads)
        await insertRows(bench.dataSource, entity, rows.length, INSERT_CHUNK[name]);
      const dirtied = await makeEveryRowDirty(bench, state);
      context.log(`${label}: setup ${((performance.now() - setupStarted) / 1000).toFixed(1)} s (${dirtied})`);

      // Each side runs RUNS_PER_SIDE times, in turns (bulk, flush, bulk, flush …; Redis restored to the
      // dirty state before each flush after the first), so that neither side alone meets a colder or a
      // more bloated table; each side's figure is its fastest run.
      const bulkRuns: Array<Awaited<ReturnType<typeof bulkAdd>>> = [];
      const flushRuns: MeasuredFlush[] = [];
      for (let turn = 0; turn < RUNS_PER_SIDE; turn++) {
        if (turn > 0) await makeEveryRowDirty(bench, state);
        bulkRuns.push(await bulkAdd(name, bench.dataSource, workloads));
        await verifyTotals(bench.dataSource, workloads, 2 * turn + 1, `bulk UPDATE run ${turn + 1}`);
        flushRuns.push(await measureFlush(bench, timer, state, total));
        await verifyTotals(bench.dataSource, workloads, 2 * turn + 2, `library flush run ${turn + 1}`);
      }
      const bulk = fastest(bulkRuns);
      const flush = fastest(flushRuns);
      context.log(
        `${label}: flush ${flushRuns.map((run) => run.seconds.toFixed(2)).join(' / ')} s, bulk UPDATE ` +
          `${bulkRuns.map((run) => run.seconds.toFixed(2)).join(' / ')} s; fastest flush: ${flush.calls} calls, ` +
          `${flush.batches} batches, ${flush.sql.statements} statements taking ${flush.sql.seconds.toFixed(2)} s summed over connections`,
      );
      return {
        label: `${label}, ${total.toLocaleString('en-US')} rows`,
        library: { perSecond: total / flush.seconds },
        baseline: { perSecond: total / bulk.seconds },
        extra: {
          'flush calls': flush.calls,
          batches: flush.batches,
          ...Object.fromEntries(flushRuns.map((run, index) => [`library s run ${index + 1}`, round(run.seconds)])),
          'library SQL statements': flush.sql.statements,
          // Claim, ack and status scripts: what the flush costs the single-threaded Redis per row.
          'Redis script µs/row': flush.redisUsec / total,
          // Also its I/O (the claims' replies) and its lazy-free thread, which frees what claims and acks
          // UNLINK; like the app CPU, it includes the status() calls between flush() calls.
          ...(state.redisCpu && { 'Redis CPU µs/row': flush.redisCpuUsec / total }),
          // Includes the status() calls between flush() calls.
          'app CPU µs/row': flush.appCpuUsec / total,
          ...(mainThreadCpu && {
            'event loop CPU µs/row (library)': flush.eventLoopCpuUsec / total,
            'event loop CPU µs/row (bulk)': bulk.eventLoopCpuUsec / total,
          }),
          ...(mainThreadWait && {
            'event loop waiting for a CPU µs/row (library)': flush.eventLoopWaitUsec / total,
            'event loop waiting for a CPU µs/row (bulk)': bulk.eventLoopWaitUsec / total,
          }),
          'library s in SQL (Σ connections)': round(flush.sql.seconds),
          'bulk statements': bulk.statements,
          ...Object.fromEntries(bulkRuns.map((run, index) => [`bulk s run ${index + 1}`, round(run.seconds)])),
        },
      };
    } finally {
      // Closed first: its shutdown flush must not recreate keys after they were deleted.
      await bench.close();
      await deleteKeys(state.inspector, state.prefix);
    }
  });
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;

export const flushThroughput: BenchScenario = {
  id: 3,
  slug: 'flush-throughput',
  title: 'Flush throughput',
  async run(context) {
    const state: DirtyState = {
      prefix: benchPrefix('flush'),
      workloads: flushWorkload(context.quick ? 10_000 : 100_000),
      inspector: new Redis(REDIS_URL, RESP2),
    };
    const rows: BenchRow[] = [];
    try {
      state.redisCpu = await redisProcessCpu(state.inspector);
      for (const { name, label } of DATABASES) rows.push(await measureDatabase(context, name, label, state));
    } finally {
      await deleteKeys(state.inspector, state.prefix);
      state.inspector.disconnect();
    }
    return {
      library:
        `\`CounterService.flush()\` with the default ${COUNTER_DEFAULTS.shards} shards per entity and the default batches of ` +
        `${DEFAULT_FLUSH_BATCH_SIZE.toLocaleString('en-US')} rows per transaction (${sqliteDialect.defaultFlushBatchSize.toLocaleString('en-US')} on SQLite; ` +
        'the backlog of every shard read first, in one status script call on a single Redis; then a claim script per shard with changes, ' +
        'two shards per worker and round trip per 1,000 rows of a transaction, at least three workers; one transaction with the ledger inserts and one UPDATE per table for the batches of several shards; ' +
        "an ack script per shard, a transaction's in one round trip), " +
        'called until `status().pendingRows` is 0, with every row dirty on its three counters in Redis.',
      baseline:
        `the same deltas added to the same rows by a hand-written set-based UPDATE through the same TypeORM data source ` +
        `(\`dataSource.query\`), ${BULK_CHUNK_ROWS.toLocaleString('en-US')} rows per statement, statements one after another, each ` +
        'autocommitted: PostgreSQL `UPDATE … FROM (VALUES …)`, MariaDB `UPDATE … JOIN (SELECT ? AS id, … UNION ALL VALUES (…), …)`, SQLite `UPDATE … FROM (VALUES …)`.',
      unit: 'rows',
      rows,
      checks: rows.map((row) => {
        const target = flushTarget(row.label);
        return atLeast(
          `${row.label}: flush ≥ ${target}× raw bulk UPDATE`,
          ratio(row.library.perSecond, row.baseline?.perSecond),
          target,
        );
      }),
      notes: [
        'Rows are split evenly over three entities (BenchPost, BenchVideo, BenchAnswer); each row has a different delta on ' +
          "each of its three counters, and every row's database values are checked exactly after each side ran.",
        'Setup (not timed): rows inserted with counters at 0, loaded into Redis with `getMany`, then made dirty with ' +
          `${SETUP_IN_FLIGHT} \`increment\` calls in flight, for the first database; the next databases get a DUMP/RESTORE copy ` +
          'of the Redis keys that setup left, renamed to their own table paths (the same state: their rows are at 0 as well).',
        `Each side runs ${RUNS_PER_SIDE} times, in turns: bulk UPDATE, flush, bulk UPDATE, flush … (same tables, same pool; before each flush ` +
          'after the first Redis gets the same DUMP/RESTORE copy of the dirty state back, untimed; each timed run starts ' +
          `after a pause of ${SETTLE_MS} ms, so that V8 has compiled what the untimed checks before it made it compile). Each side's figure is its fastest run; ` +
          "every run is in the table. Three runs rather than two because a process's first flushes still run code V8 has not " +
          'optimized, and its compiler threads take the second core from Redis; an app that flushes every second is past that. ' +
          'The `status()` calls between flushes are not timed.',
        '"s in SQL" adds up the time each statement took inside the TypeORM driver (its own `Date.now()` timing, ' +
          "through `maxQueryExecutionTime`), over all connections: the rest of the library's time is Redis (claim and ack " +
          'scripts) and Node. "library SQL statements" counts BEGIN, ledger INSERT, UPDATE and COMMIT of every batch.',
        "Redis CPU µs/row: the Redis server process's CPU time (all its threads, Linux `/proc/<pid>/task/*/schedstat`) per row " +
          "over the fastest flush: the scripts' time, the I/O of their requests and replies, and the lazy-free thread, which frees " +
          'the dirty sets and batch hashes that claims and acks `UNLINK`.',
        "App CPU µs/row: this process's CPU time (user + system, all its threads) per row over the fastest flush. Event loop " +
          "CPU µs/row: the CPU time of the process's main thread alone (Linux `/proc/self/task/<pid>/schedstat`) per row, " +
          "over each side's fastest run. That thread runs one thing at a time, so a run lasts at least that long; " +
          "better-sqlite3 runs SQLite's statements on it. So on SQLite a flush whose event loop CPU per row is above the " +
          "bulk UPDATE's time per row ÷ 0.6 cannot meet the target, however fast Redis answers.",
        'Event loop waiting for a CPU µs/row: the time that same thread was ready to run but another thread had the core ' +
          "(the second field of the same `schedstat`), per row, over each side's fastest run. The bulk UPDATE needs nothing " +
          'but that thread; a flush also needs Redis (its main thread runs the claim and ack scripts, its lazy-free thread ' +
          "frees what they `UNLINK`) and V8's compiler threads, and on a machine of two cores they take turns with it.",
        `A shard's rows go in its own batches, so a flush makes at least one batch per dirty shard ` +
          `(${COUNTER_DEFAULTS.shards} × 3 entities here), whatever the batch size; a transaction gathers several.`,
        'The library runs up to 4 batch transactions at once on PostgreSQL and MariaDB (the default `flushConcurrency`) (1 on SQLite, where two other workers claim in Redis meanwhile); the baseline runs its ' +
          'statements one at a time.',
      ],
    };
  },
};
