import type { BenchContext, BenchScenario } from '../harness/bench-context.js';
import { startBenchApp, insertRows, loadIntoRedis } from '../harness/bench-app.js';
import { BenchPost } from '../harness/bench-entities.js';
import { atLeast, atMost, ratio, type BenchRow, type TargetCheck } from '../harness/bench-results.js';
import { runClosedLoop } from '../harness/closed-loop.js';
import { withDatabase } from '../harness/databases.js';
import { rawClient } from '../harness/raw-redis.js';
import { benchPrefix, deleteKeys, inspectionClient, type Topology } from '../harness/redis-targets.js';

const CONCURRENCIES = [1, 50, 200];

/** Picks the row of an operation: spread over all rows, so no single hash dominates. */
const rowOf = (rows: number, worker: number, sequence: number) => ((worker * 7_919 + sequence * 104_729) % rows) + 1;

/**
 * `CounterService.increment` on rows already in Redis against raw `INCR` through a client made with
 * the module's own settings, at several concurrencies. Shared with the scale-out scenario.
 */
export async function measureIncrements(context: BenchContext, topology: Topology, concurrencies: number[]) {
  const rows = context.quick ? 1_000 : 10_000;
  const prefix = benchPrefix('increment');
  return withDatabase('postgres', async (database) => {
    // The scheduled flush is off: it is a separate cost (scenarios 2 and 3), not part of an increment.
    const bench = await startBenchApp({ database: database.options, topology, keyPrefix: prefix, counter: { flushEnabled: false } });
    const raw = await rawClient(topology);
    const inspector = inspectionClient(topology);
    try {
      await insertRows(bench.dataSource, BenchPost, rows);
      await loadIntoRedis(bench.counters, BenchPost, rows);
      const results: BenchRow[] = [];
      for (const concurrency of concurrencies) {
        const measure = (operation: (worker: number, sequence: number) => Promise<unknown>) =>
          runClosedLoop({ concurrency, durationMs: context.durationMs, warmupMs: context.warmupMs, operation });
        const baseline = await measure((worker, sequence) => raw.client.incr(`${prefix}:raw:${rowOf(rows, worker, sequence)}`));
        const library = await measure((worker, sequence) =>
          bench.counters.increment(BenchPost, rowOf(rows, worker, sequence), 'like_count'),
        );
        for (const side of [baseline, library]) {
          if (side.errors > 0) throw new Error(`${side.errors} operations failed at concurrency ${concurrency}: ${side.firstError}`);
        }
        context.log(
          `concurrency ${concurrency}: library ${Math.round(library.opsPerSec)}/s p99 ${library.p99Ms.toFixed(3)} ms, ` +
            `INCR ${Math.round(baseline.opsPerSec)}/s p99 ${baseline.p99Ms.toFixed(3)} ms`,
        );
        results.push({
          label: `${topology}, concurrency ${concurrency}`,
          library: { perSecond: library.opsPerSec, p50Ms: library.p50Ms, p99Ms: library.p99Ms },
          baseline: { perSecond: baseline.opsPerSec, p50Ms: baseline.p50Ms, p99Ms: baseline.p99Ms },
        });
      }
      return results;
    } finally {
      // Closed first: its final flush on shutdown would recreate the shards' generation keys.
      await bench.close();
      await raw.close();
      await deleteKeys(inspector, prefix);
      inspector.disconnect();
    }
  });
}

export const incrementPath: BenchScenario = {
  id: 1,
  slug: 'increment-path',
  title: 'Increment path',
  async run(context) {
    const rows = await measureIncrements(context, 'standalone', CONCURRENCIES);
    const checks: TargetCheck[] = rows.flatMap((row) => [
      atLeast(`${row.label}: throughput ≥ 0.8× raw INCR`, ratio(row.library.perSecond, row.baseline?.perSecond), 0.8),
      atMost(`${row.label}: p99 ≤ 2× raw INCR`, ratio(row.library.p99Ms, row.baseline?.p99Ms), 2),
    ]);
    return {
      library: '`CounterService.increment(BenchPost, id, "like_count")` on rows already in Redis (one of 10,000, spread), scheduled flush off.',
      baseline: 'raw `INCR` of one key per row through an ioredis client with the module\'s own settings, same Redis server.',
      unit: 'increments',
      rows,
      checks,
      notes: ['Both sides run in this one Node process, closed loop: each of the N clients sends its next operation when the last one answered.'],
    };
  },
};
