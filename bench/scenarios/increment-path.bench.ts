import type { Redis } from 'ioredis';
import type { BenchContext, BenchScenario } from '../harness/bench-context.js';
import { startBenchApp, insertRows, loadIntoRedis } from '../harness/bench-app.js';
import { BenchPost } from '../harness/bench-entities.js';
import { atLeast, atMost, ratio, type BenchRow, type TargetCheck } from '../harness/bench-results.js';
import { runClosedLoop } from '../harness/closed-loop.js';
import { withDatabase } from '../harness/databases.js';
import { rawClient } from '../harness/raw-redis.js';
import { commandCount, usecPerCall } from '../harness/redis-command-cost.js';
import { redisProcessCpu } from '../harness/redis-process-cpu.js';
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
      const redisCpu = topology === 'standalone' ? await redisProcessCpu(raw.client as Redis) : undefined;
      for (const concurrency of concurrencies) {
        // Redis's own time per command is read from INFO commandstats on a single Redis (on a cluster
        // the calls spread over the masters).
        const measure = async (command: string, operation: (worker: number, sequence: number) => Promise<unknown>) => {
          const before = topology === 'standalone' ? await commandCount(raw.client, command) : undefined;
          const cpuBefore = redisCpu?.();
          const result = await runClosedLoop({ concurrency, durationMs: context.durationMs, warmupMs: context.warmupMs, operation });
          const after = before ? await commandCount(raw.client, command) : undefined;
          const redisUs = before && after ? usecPerCall(before, after) : Number.NaN;
          // The server's whole CPU time (I/O included) over every call of the run, warm-up included.
          const redisCpuUs = redisCpu && before && after ? (redisCpu() - cpuBefore!) / (after.calls - before.calls) : Number.NaN;
          return { ...result, redisUs, redisCpuUs };
        };
        const baseline = await measure('incr', (worker, sequence) => raw.client.incr(`${prefix}:raw:${rowOf(rows, worker, sequence)}`));
        const library = await measure('evalsha', (worker, sequence) =>
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
          extra: {
            'app CPU µs/op (library)': library.cpuUsPerOp,
            'app CPU µs/op (INCR)': baseline.cpuUsPerOp,
            ...(topology === 'standalone'
              ? {
                  'Redis µs/call (script)': library.redisUs,
                  'Redis µs/call (INCR)': baseline.redisUs,
                  'Redis CPU µs/op (library)': library.redisCpuUs,
                  'Redis CPU µs/op (INCR)': baseline.redisCpuUs,
                }
              : {}),
          },
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
      notes: [
        'Both sides run in this one Node process, closed loop: each of the N clients sends its next operation when the last one answered.',
        'App CPU µs/op: this process\'s CPU time (user + system) per operation over the measured window. Redis µs/call: the server\'s own time per EVALSHA or INCR (INFO commandstats), without network and I/O. Redis CPU µs/op: the server process\'s whole CPU time (its I/O included, from /proc) per call.',
      ],
    };
  },
};
