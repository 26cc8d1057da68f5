import { cpus, loadavg } from 'node:os';
import type { DataSource } from 'typeorm';
import { CounterLedgerEntry, type CounterService } from '../../lib/index.js';
import type { BenchContext, BenchScenario } from '../harness/bench-context.js';
import { insertRows, startBenchApp, type BenchApp } from '../harness/bench-app.js';
import { BenchPost } from '../../test/fixtures/entities.js';
import { atLeast, atMost, ratio, type BenchRow, type TargetCheck } from '../harness/bench-results.js';
import { runClosedLoop, sleep, type ClosedLoopResult } from '../harness/closed-loop.js';
import { withDatabase, type DatabaseName } from '../harness/databases.js';
import { benchPrefix, deleteKeys, inspectionClient } from '../harness/redis-targets.js';
import { startRowWriteCount } from '../harness/row-writes.js';
import { StatementLog } from '../harness/statement-log.js';

const CLIENTS = 50;
const HOT_ID = 1;
const TABLE = 'bench_post';

/** The issue's throughput targets: the two databases' hot-row UPDATE rates differ. */
const TARGETS: Record<'postgres' | 'mariadb', { label: string; minimumRatio: number }> = {
  postgres: { label: 'PostgreSQL', minimumRatio: 40 },
  mariadb: { label: 'MariaDB', minimumRatio: 10 },
};

/** One side of the comparison on one database; counts cover warm-up, window and (library) final flush. */
interface SideRun {
  loop: ClosedLoopResult;
  /** Likes acknowledged to a client, warm-up and the last in-flight ones included. */
  likes: number;
  statements: number;
  rowWrites: number;
  /** Library only: batches in the ledger and the dirty rows they wrote (one row each here). */
  batches?: number;
  flushedRows?: number;
  /** The server's commit durability setting, which bounds the naive side. */
  durability: string;
  poolSize: number;
  /** The machine's 1-minute load average as the clients started: other processes share the cores. */
  load: number;
}

/** Counts every like a client saw acknowledged, whether or not the closed loop was measuring then. */
function tallied(like: () => Promise<unknown>) {
  const tally = { likes: 0, failures: 0, firstFailure: '' };
  const operation = async () => {
    try {
      await like();
      tally.likes++;
    } catch (error) {
      tally.failures++;
      tally.firstFailure ||= (error as Error).message;
      throw error;
    }
  };
  return { tally, operation };
}

/**
 * Runs the 50 clients on row HOT_ID of a fresh database, with statements and server-side row writes
 * counted from the warm-up's start to the end of `settle` (the library's final flush), then checks that
 * the row holds exactly the likes acknowledged.
 */
async function runSide(
  context: BenchContext,
  database: DatabaseName,
  side: 'naive' | 'library',
  like: (bench: BenchApp) => Promise<unknown>,
  settle?: (bench: BenchApp) => Promise<void>,
): Promise<SideRun> {
  const prefix = benchPrefix(`hot-row-${side}`);
  return withDatabase(database, async (testDatabase) => {
    const statements = new StatementLog();
    // The naive app keeps the module loaded but idle, so both sides are the same Nest app otherwise.
    const counter = side === 'naive' ? { flushEnabled: false } : undefined;
    const bench = await startBenchApp({
      database: testDatabase.options,
      topology: 'standalone',
      keyPrefix: prefix,
      counter,
      logger: statements,
    });
    const inspector = inspectionClient('standalone');
    try {
      await insertRows(bench.dataSource, BenchPost, 1);
      const rowWrites = await startRowWriteCount(bench.dataSource, TABLE);
      const statementsBefore = statements.statements;
      const { tally, operation } = tallied(() => like(bench));
      const { durationMs, warmupMs } = context;
      const load = loadavg()[0];
      const loop = await runClosedLoop({ concurrency: CLIENTS, durationMs, warmupMs, operation });
      if (tally.failures > 0) {
        // A failed like may or may not have been applied: the exact comparison below would mean nothing.
        throw new Error(`${database} ${side}: ${tally.failures} likes failed: ${tally.firstFailure}`);
      }
      await settle?.(bench);
      const statementsUsed = statements.statements - statementsBefore;
      const writes = await rowWrites.stop();
      await expectLikes(bench.dataSource, tally.likes, `${database} ${side}`);
      const ledger = side === 'library' ? await ledgerTotals(bench.dataSource) : {};
      const durability = await commitSetting(bench.dataSource);
      const poolSize = (bench.dataSource.options as { poolSize?: number }).poolSize ?? Number.NaN;
      const { count: failed, first } = statements.failures;
      if (failed > 0) context.log(`${database} ${side}: ${failed} statements failed (counted), first: ${first}`);
      const counts = { likes: tally.likes, statements: statementsUsed, rowWrites: writes, ...ledger };
      return { loop, ...counts, durability, poolSize, load };
    } finally {
      await bench.close();
      await deleteKeys(inspector, prefix);
      inspector.disconnect();
    }
  });
}

async function expectLikes(dataSource: DataSource, likes: number, side: string): Promise<void> {
  const row = await dataSource.getRepository(BenchPost).findOneByOrFail({ id: HOT_ID });
  if (Number(row.likeCount) !== likes) {
    throw new Error(`${side}: like_count is ${row.likeCount} in the database, ${likes} likes were acknowledged`);
  }
}

/** Batches the flushes wrote, from the ledger (one row per committed batch, with its row count). */
async function ledgerTotals(dataSource: DataSource): Promise<{ batches: number; flushedRows: number }> {
  const entries = await dataSource.getRepository(CounterLedgerEntry).find();
  return { batches: entries.length, flushedRows: entries.reduce((sum, entry) => sum + entry.rowCount, 0) };
}

/** `flush()` until Redis holds nothing for the database: a scheduled flush may hold the shard a moment. */
async function flushUntilEmpty(counters: CounterService): Promise<void> {
  for (let round = 0; round < 100; round++) {
    const report = await counters.flush();
    if (report.error) throw report.error;
    if ((await counters.status()).pendingRows === 0) return;
    await sleep(20);
  }
  throw new Error('counter changes were still pending after 100 flushes');
}

/** The durability settings that decide how fast a committed UPDATE can be: read, not assumed. */
async function commitSetting(dataSource: DataSource): Promise<string> {
  if (dataSource.options.type === 'postgres') {
    const [row]: Array<{ synchronous_commit: string }> = await dataSource.query('SHOW synchronous_commit');
    return `synchronous_commit = ${row.synchronous_commit}`;
  }
  const [row]: Array<{ Value: string }> = await dataSource.query(
    "SHOW GLOBAL VARIABLES LIKE 'innodb_flush_log_at_trx_commit'",
  );
  return `innodb_flush_log_at_trx_commit = ${row.Value}`;
}

const perTenThousand = (count: number, likes: number) => (count / likes) * 10_000;

async function measureDatabase(context: BenchContext, database: 'postgres' | 'mariadb') {
  const naive = await runSide(context, database, 'naive', (bench) =>
    bench.dataSource.getRepository(BenchPost).increment({ id: HOT_ID }, 'likeCount', 1),
  );
  const library = await runSide(
    context,
    database,
    'library',
    (bench) => bench.counters.increment(BenchPost, HOT_ID, 'like_count'),
    (bench) => flushUntilEmpty(bench.counters),
  );
  const { label } = TARGETS[database];
  const summary = (run: SideRun) =>
    `${Math.round(run.loop.opsPerSec)} likes/s, ${run.likes} likes, ${run.statements} statements, ` +
    `${run.rowWrites} row writes`;
  context.log(`${label}: library ${summary(library)} (${library.batches} batches); naive ${summary(naive)}`);
  return { database, naive, library };
}

export const hotRow: BenchScenario = {
  id: 2,
  slug: 'hot-row',
  title: 'Hot row: the library vs repository.increment()',
  async run(context) {
    const measured = [await measureDatabase(context, 'postgres'), await measureDatabase(context, 'mariadb')];
    const rows: BenchRow[] = [];
    const checks: TargetCheck[] = [];
    const notes: string[] = [];
    for (const { database, naive, library } of measured) {
      const { label, minimumRatio } = TARGETS[database];
      rows.push({
        label: `${label}, ${CLIENTS} clients, one row`,
        library: { perSecond: library.loop.opsPerSec, p50Ms: library.loop.p50Ms, p99Ms: library.loop.p99Ms },
        baseline: { perSecond: naive.loop.opsPerSec, p50Ms: naive.loop.p50Ms, p99Ms: naive.loop.p99Ms },
        extra: {
          'statements/10k likes (library)': perTenThousand(library.statements, library.likes),
          'statements/10k likes (naive)': perTenThousand(naive.statements, naive.likes),
          'row writes (library)': library.rowWrites,
          'flushed batches': library.batches ?? 0,
          'row writes (naive)': naive.rowWrites,
          'likes (library)': library.likes,
          'likes (naive)': naive.likes,
        },
      });
      checks.push(
        atLeast(
          `${label}: likes/s ≥ ${minimumRatio}× repository.increment()`,
          ratio(library.loop.opsPerSec, naive.loop.opsPerSec),
          minimumRatio,
        ),
        atMost(`${label}: row writes per dirty row per flush ≤ 1`, ratio(library.rowWrites, library.flushedRows), 1),
      );
      notes.push(
        `${label}: the database held exactly the ${library.likes} likes the library acknowledged and the ${naive.likes} ` +
          `the naive side did (warm-up included), checked after the run; ${naive.durability}; TypeORM pool of ` +
          `${naive.poolSize} connections (naive) and ${library.poolSize} (library). The ledger's ${library.batches} ` +
          `batches wrote ${library.flushedRows} dirty rows; the server counted ${library.rowWrites} row writes. ` +
          `1-minute load average on the ${cpus().length} cores as the clients started: naive ` +
          `${naive.load.toFixed(1)}, library ${library.load.toFixed(1)}.`,
      );
    }
    notes.push(
      `Closed loop: ${CLIENTS} clients in this one Node process like row ${HOT_ID}, each sending its next like when ` +
        "the last one was acknowledged. Both sides are the same Nest app (TypeORM with the test databases' pool, the " +
        'counter module loaded) on a fresh database of their own; the naive side has the flush off.',
      'Statements are counted by a TypeORM logger (every statement the DataSource sends, START TRANSACTION and COMMIT ' +
        'included) from the start of the warm-up to the end of the final flush, over every like acknowledged in that ' +
        'span: the scheduled flushes during warm-up wrote warm-up likes. A library batch is 4 statements (START ' +
        'TRANSACTION, ledger INSERT, UPDATE, COMMIT); the first likes add the SELECTs that load the row into Redis.',
      "Row writes are counted by the server: PostgreSQL `pg_stat_user_tables.n_tup_upd` of the bench schema's " +
        'bench_post, after `pg_stat_force_next_flush()` on every pooled connection (a backend publishes its table ' +
        'counts at most once a second, else when idle up to 10 s later, or on exit; forced, before its reply). ' +
        'MariaDB 10.11 has no `Innodb_rows_updated`: `Handler_update` of every pooled session instead (the sessions ' +
        "are this app's alone, unlike the global counters of a server shared with other runs; they update no other " +
        'table).',
      `The library side runs with the module's defaults: the scheduled flush every 1 s shares the ${cpus().length} ` +
        'cores and the database with the clients during the measured window.',
    );
    return {
      library:
        `\`CounterService.increment(BenchPost, ${HOT_ID}, "like_count")\` per like with the module's defaults ` +
        '(the scheduled flush every 1 s, its statements counted), then `flush()` until nothing is pending.',
      baseline:
        `TypeORM \`repository.increment({ id: ${HOT_ID} }, "likeCount", 1)\` per like: one autocommitted ` +
        '`UPDATE … SET like_count = like_count + 1`, through a pool of the same size.',
      unit: 'likes',
      rows,
      checks,
      notes,
    };
  },
};
