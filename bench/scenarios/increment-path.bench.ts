import type { Redis } from 'ioredis';
import type { BenchContext, BenchScenario } from '../harness/bench-context.js';
import { startBenchApp, insertRows, loadIntoRedis } from '../harness/bench-app.js';
import { BenchPost } from '../../test/fixtures/entities.js';
import { atLeast, atMost, ratio, type BenchRow, type TargetCheck } from '../harness/bench-results.js';
import { runClosedLoop } from '../harness/closed-loop.js';
import { LatencyRecorder } from '../harness/latency-recorder.js';
import { withDatabase } from '../harness/databases.js';
import { rawClient } from '../harness/raw-redis.js';
import { commandCount } from '../harness/redis-command-cost.js';
import { redisProcessCpu } from '../harness/redis-process-cpu.js';
import { benchPrefix, deleteKeys, inspectionClient, type Topology } from '../harness/redis-targets.js';

const CONCURRENCIES = [1, 50, 200];
/** Turns each side takes at each concurrency (see measureIncrements). */
const SLICES = 5;
/**
 * Where the floor side runs too: at concurrency 1 nothing is batched, so every increment is one script
 * call, and the floor shows what any one-script increment costs against INCR on this machine.
 */
const FLOOR_CONCURRENCY = 1;
/** Where a keyed side runs too: each increment with an idempotency key of its own (G8), every one applied. */
const KEYED_CONCURRENCIES = [1, 50];

/**
 * The least a Lua increment can do, sent through the same kind of client: read the row's value (is it
 * there? within bounds?) and write it back with the pending delta. Two commands, no checks, no dirty
 * set: the library's single-change script with its bookkeeping taken out.
 */
const FLOOR_LUA = `
local values = redis.call('HMGET', KEYS[1], ARGV[1], ARGV[2])
local value = (tonumber(values[1]) or 0) + ARGV[3]
redis.call('HSET', KEYS[1], ARGV[1], value, ARGV[2], (tonumber(values[2]) or 0) + ARGV[3])
return value
`;
type FloorClient = Redis & {
  benchFloorIncrement(key: string, live: string, pending: string, by: number): Promise<number>;
};

/** One side's closed loops, added up over its turns. */
interface SideTotals {
  operations: number;
  completed: number;
  elapsedMs: number;
  cpuUs: number;
  errors: number;
  firstError?: string;
  latencies: LatencyRecorder;
  redisUsec: number;
  redisCalls: number;
  redisCpuUs: number;
}

const sideTotals = (): SideTotals => ({
  operations: 0,
  completed: 0,
  elapsedMs: 0,
  cpuUs: 0,
  errors: 0,
  latencies: new LatencyRecorder(),
  redisUsec: 0,
  redisCalls: 0,
  redisCpuUs: 0,
});

/**
 * A side's figures. Redis's figures are per operation, not per call (the library sends the increments
 * of one turn of the event loop in one call), over every operation completed, warm-ups included, as
 * the server counts them; NaN where the server was not read (a cluster).
 */
function figuresOf(totals: SideTotals) {
  return {
    opsPerSec: totals.operations / (totals.elapsedMs / 1000),
    p50Ms: totals.latencies.percentile(50),
    p99Ms: totals.latencies.percentile(99),
    cpuUsPerOp: totals.cpuUs / totals.operations,
    redisUs: totals.redisCalls > 0 ? totals.redisUsec / totals.completed : Number.NaN,
    redisCpuUs: totals.redisCalls > 0 ? totals.redisCpuUs / totals.completed : Number.NaN,
    perCall: totals.completed / totals.redisCalls,
    errors: totals.errors,
    firstError: totals.firstError,
  };
}

/** The raw client, able to send the floor script (by SHA, loaded again on NOSCRIPT as the module does). */
function floorClient(client: Redis): FloorClient {
  if (!('benchFloorIncrement' in client))
    client.defineCommand('benchFloorIncrement', { numberOfKeys: 1, lua: FLOOR_LUA });
  return client as FloorClient;
}

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
    const bench = await startBenchApp({
      database: database.options,
      topology,
      keyPrefix: prefix,
      counter: { flushEnabled: false },
    });
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
        const slice = async (
          totals: SideTotals,
          command: string,
          warmupMs: number,
          operation: (worker: number, sequence: number) => Promise<unknown>,
        ) => {
          const before = topology === 'standalone' ? await commandCount(raw.client, command) : undefined;
          const cpuBefore = redisCpu?.();
          const result = await runClosedLoop({
            concurrency,
            durationMs: context.durationMs / SLICES,
            warmupMs,
            operation,
            latencies: totals.latencies,
          });
          totals.operations += result.operations;
          totals.completed += result.completed;
          totals.elapsedMs += result.elapsedMs;
          totals.cpuUs += result.cpuUs;
          totals.errors += result.errors;
          totals.firstError ??= result.firstError;
          if (before) {
            const after = await commandCount(raw.client, command);
            totals.redisUsec += after.usec - before.usec;
            totals.redisCalls += after.calls - before.calls;
            // The server's whole CPU time (I/O included) over every operation of the slice, warm-up included.
            totals.redisCpuUs += redisCpu!() - cpuBefore!;
          }
        };
        const baselineTotals = sideTotals();
        const libraryTotals = sideTotals();
        const floorTotals = concurrency === FLOOR_CONCURRENCY && topology === 'standalone' ? sideTotals() : undefined;
        const keyedTotals =
          KEYED_CONCURRENCIES.includes(concurrency) && topology === 'standalone' ? sideTotals() : undefined;
        let keys = 0;
        // The sides in turns, a slice of the time each, so that drift in the machine's speed falls on
        // all alike (at concurrency 1 it moved either side by ±30% from one run to the next).
        for (let i = 0; i < SLICES; i++) {
          const warmupMs = i === 0 ? context.warmupMs : context.warmupMs / SLICES;
          await slice(baselineTotals, 'incr', warmupMs, (worker, sequence) =>
            raw.client.incr(`${prefix}:raw:${rowOf(rows, worker, sequence)}`),
          );
          await slice(libraryTotals, 'evalsha', warmupMs, (worker, sequence) =>
            bench.counters.increment(BenchPost, rowOf(rows, worker, sequence), 'like_count'),
          );
          if (keyedTotals) {
            await slice(keyedTotals, 'evalsha', warmupMs, (worker, sequence) =>
              bench.counters.increment(BenchPost, rowOf(rows, worker, sequence), 'like_count', 1, {
                idempotencyKey: `${prefix}-${keys++}`,
              }),
            );
          }
          if (floorTotals) {
            await slice(floorTotals, 'evalsha', warmupMs, (worker, sequence) =>
              floorClient(raw.client as Redis).benchFloorIncrement(
                `${prefix}:floor:${rowOf(rows, worker, sequence)}`,
                'v:like_count',
                'p:like_count',
                1,
              ),
            );
          }
        }
        const baseline = figuresOf(baselineTotals);
        const library = figuresOf(libraryTotals);
        const floor = floorTotals && figuresOf(floorTotals);
        const keyed = keyedTotals && figuresOf(keyedTotals);
        for (const side of [baseline, library, ...(floor ? [floor] : []), ...(keyed ? [keyed] : [])]) {
          if (side.errors > 0)
            throw new Error(`${side.errors} operations failed at concurrency ${concurrency}: ${side.firstError}`);
        }
        context.log(
          `concurrency ${concurrency}: library ${Math.round(library.opsPerSec)}/s p99 ${library.p99Ms.toFixed(3)} ms, ` +
            `INCR ${Math.round(baseline.opsPerSec)}/s p99 ${baseline.p99Ms.toFixed(3)} ms` +
            (floor ? `, floor script ${Math.round(floor.opsPerSec)}/s` : '') +
            (keyed ? `, keyed ${Math.round(keyed.opsPerSec)}/s p99 ${keyed.p99Ms.toFixed(3)} ms` : ''),
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
                  'increments per script call': library.perCall,
                  'Redis µs/op (library)': library.redisUs,
                  'Redis µs/op (INCR)': baseline.redisUs,
                  'Redis CPU µs/op (library)': library.redisCpuUs,
                  'Redis CPU µs/op (INCR)': baseline.redisCpuUs,
                }
              : {}),
            ...(keyed
              ? {
                  'keyed/s': keyed.opsPerSec,
                  'keyed ÷ plain': keyed.opsPerSec / library.opsPerSec,
                  'keyed p99 ms': keyed.p99Ms,
                  'Redis µs/op (keyed)': keyed.redisUs,
                }
              : {}),
            ...(floor
              ? {
                  'floor script/s': floor.opsPerSec,
                  'floor ÷ INCR': floor.opsPerSec / baseline.opsPerSec,
                  'Redis µs/op (floor)': floor.redisUs,
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
    // At concurrency 1 nothing can be batched: every increment is one script call, judged against the
    // least one script call costs (the floor) in the same turns; INCR, with no script, is out of reach.
    const checks: TargetCheck[] = rows.flatMap((row) => {
      const floor = row.extra?.['floor script/s'];
      const throughput =
        floor === undefined
          ? atLeast(
              `${row.label}: throughput ≥ 0.8× raw INCR`,
              ratio(row.library.perSecond, row.baseline?.perSecond),
              0.8,
            )
          : atLeast(`${row.label}: throughput ≥ 0.85× the one-script floor`, ratio(row.library.perSecond, floor), 0.85);
      return [throughput, atMost(`${row.label}: p99 ≤ 2× raw INCR`, ratio(row.library.p99Ms, row.baseline?.p99Ms), 2)];
    });
    return {
      library:
        '`CounterService.increment(BenchPost, id, "like_count")` on rows already in Redis (one of 10,000, spread), scheduled flush off.',
      baseline:
        "raw `INCR` of one key per row through an ioredis client with the module's own settings, same Redis server.",
      unit: 'increments',
      rows,
      checks,
      notes: [
        `Both sides run in this one Node process, closed loop: each of the N clients sends its next operation when the last one answered. The sides take turns, ${SLICES} slices of the measured time each, so that drift in the machine's speed falls on both alike.`,
        `Floor (concurrency ${FLOOR_CONCURRENCY}): a bare two-command script (HMGET, then HSET of the value and the pending delta, on hashes of its own) through the same kind of client, in the same turns: the least any increment made of one Lua script call costs, the library's bookkeeping (bounds, dirty set, unseeded rows) taken out. Floor ÷ INCR is the best ratio a one-script increment reaches in this run; the library's throughput at concurrency ${FLOOR_CONCURRENCY} is judged against the floor (≥ 0.85×).`,
        `Keyed (concurrency ${KEYED_CONCURRENCIES.join(' and ')}): the same increments, each with an idempotency key of its own (\`{ idempotencyKey }\`, a fresh key per call, so every one applies and is remembered), in the same turns; keyed ÷ plain is its throughput over the library's plain increments.`,
        "App CPU µs/op: this process's CPU time (user + system) per operation over the measured window. Increments per script call: the library sends the increments requested in one turn of the event loop in one EVALSHA. Redis µs/op: the server's own time in EVALSHA or INCR (INFO commandstats), without network and I/O, per increment. Redis CPU µs/op: the server process's whole CPU time (its I/O included, from /proc) per increment.",
      ],
    };
  },
};
