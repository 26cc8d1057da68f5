import type { BenchContext, BenchScenario } from '../harness/bench-context.js';
import { startBenchApp, insertRows, loadIntoRedis, type BenchApp } from '../harness/bench-app.js';
import { BenchPost } from '../../test/fixtures/entities.js';
import type { BenchRow } from '../harness/bench-results.js';
import { runClosedLoop } from '../harness/closed-loop.js';
import { LatencyRecorder } from '../harness/latency-recorder.js';
import { withDatabase } from '../harness/databases.js';
import { benchPrefix } from '../harness/redis-targets.js';
import { RedisServer } from '../../support/redis-server.js';
import { WAITAOF_SERVER, waitAofServerMissing, waitAofWaitsForFsync } from '../../support/waitaof-server.js';
import { Redis } from 'ioredis';

const CONCURRENCIES = [1, 50];
/** Turns each side takes at each concurrency, alternating, so that drift falls on both alike. */
const SLICES = 5;
/** The bench's own server (a port of issue 49's range). */
const PORT = 6416;

interface Side {
  operations: number;
  elapsedMs: number;
  errors: number;
  firstError?: string;
  latencies: LatencyRecorder;
}

const side = (): Side => ({ operations: 0, elapsedMs: 0, errors: 0, latencies: new LatencyRecorder() });

/**
 * `increment` with `durability: 'fsync'` against the same without, on one server with `appendonly yes`
 * and `appendfsync everysec` (Valkey unless COUNTER_WAITAOF_SERVER names another): what waiting for the
 * fsync costs a caller, alone and with 50 at once (whose changes share one wait per turn).
 */
export const durability: BenchScenario = {
  id: 8,
  slug: 'durability',
  title: "Durability 'fsync' (appendfsync everysec)",
  async run(context: BenchContext) {
    const skipped = { library: "increment with durability: 'fsync'", baseline: 'increment without it' };
    const missing = waitAofServerMissing();
    if (missing) return { ...skipped, unit: 'increments', rows: [], checks: [], notes: [`Not run: ${missing}`] };
    const rows = context.quick ? 1_000 : 10_000;
    const server = await RedisServer.start({
      port: PORT,
      binary: WAITAOF_SERVER,
      args: ['--appendonly', 'yes', '--appendfsync', 'everysec'],
    });
    try {
      const probe = new Redis(server.url);
      const exact = await waitAofWaitsForFsync(probe).finally(() => probe.disconnect());
      if (!exact) {
        const note = `Not run: ${WAITAOF_SERVER}'s WAITAOF answers before the fsync (redis/redis#13793); the module refuses durability 'fsync' there.`;
        return { ...skipped, unit: 'increments', rows: [], checks: [], notes: [note] };
      }
      return await withDatabase('postgres', async (database) => {
        const start = (durable: boolean, synchronize: boolean) =>
          startBenchApp({
            database: database.options,
            topology: 'standalone',
            keyPrefix: benchPrefix(durable ? 'durable' : 'plain'),
            synchronize,
            counter: { redis: server.url, flushEnabled: false, ...(durable ? { durability: 'fsync' as const } : {}) },
          });
        const apps: BenchApp[] = [];
        try {
          const plain = await start(false, true);
          apps.push(plain);
          const durable = await start(true, false);
          apps.push(durable);
          await insertRows(plain.dataSource, BenchPost, rows);
          await loadIntoRedis(plain.counters, BenchPost, rows);
          await loadIntoRedis(durable.counters, BenchPost, rows);
          const results: BenchRow[] = [];
          for (const concurrency of CONCURRENCIES) {
            const sides = { plain: side(), durable: side() };
            for (let i = 0; i < SLICES; i++) {
              for (const [name, app] of [
                ['plain', plain],
                ['durable', durable],
              ] as const) {
                const totals = sides[name];
                const result = await runClosedLoop({
                  concurrency,
                  durationMs: context.durationMs / SLICES,
                  warmupMs: i === 0 ? context.warmupMs : context.warmupMs / SLICES,
                  latencies: totals.latencies,
                  operation: (worker, sequence) =>
                    app.counters.increment(BenchPost, ((worker * 7_919 + sequence * 104_729) % rows) + 1, 'like_count'),
                });
                totals.operations += result.operations;
                totals.elapsedMs += result.elapsedMs;
                totals.errors += result.errors;
                totals.firstError ??= result.firstError;
              }
            }
            for (const [name, totals] of Object.entries(sides)) {
              if (totals.errors > 0)
                throw new Error(
                  `${totals.errors} ${name} increments failed at concurrency ${concurrency}: ${totals.firstError}`,
                );
            }
            const figures = (totals: Side) => ({
              perSecond: totals.operations / (totals.elapsedMs / 1000),
              p50Ms: totals.latencies.percentile(50),
              p99Ms: totals.latencies.percentile(99),
            });
            const library = figures(sides.durable);
            const baseline = figures(sides.plain);
            context.log(
              `concurrency ${concurrency}: durable ${Math.round(library.perSecond)}/s p50 ${library.p50Ms.toFixed(1)} ms ` +
                `p99 ${library.p99Ms.toFixed(1)} ms; plain ${Math.round(baseline.perSecond)}/s p99 ${baseline.p99Ms.toFixed(2)} ms`,
            );
            results.push({
              label: `${WAITAOF_SERVER} everysec, concurrency ${concurrency}`,
              library,
              baseline,
              extra: { 'durable ÷ plain (throughput)': library.perSecond / baseline.perSecond },
            });
          }
          return {
            library: "increment with durability: 'fsync'",
            baseline: 'increment without it, same server',
            unit: 'increments',
            rows: results,
            checks: [],
            notes: [
              `One ${WAITAOF_SERVER} with appendonly yes and appendfsync everysec; rows loaded in Redis, no flush.`,
              'A durable increment waits for the next fsync (once a second); the changes of a turn share one WAITAOF.',
            ],
          };
        } finally {
          for (const app of apps.reverse()) await app.close();
        }
      });
    } finally {
      await server.stop();
    }
  },
};
