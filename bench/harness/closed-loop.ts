import { LatencyRecorder } from './latency-recorder.js';

export interface ClosedLoopOptions {
  /** Operations in flight at once: each worker starts its next operation when the last one finished. */
  concurrency: number;
  /** Measured time, after the warm-up. */
  durationMs: number;
  /** Time run first and not measured: connections, script loading, JIT. */
  warmupMs: number;
  /** One operation; `worker` is 0..concurrency-1, `sequence` counts the worker's operations. */
  operation(worker: number, sequence: number): Promise<unknown>;
  /** Where to record latencies: pass one recorder to several runs to take percentiles over all of them. */
  latencies?: LatencyRecorder;
}

export interface ClosedLoopResult {
  operations: number;
  /** Every operation that completed, warm-up and the last ones after the window included. */
  completed: number;
  opsPerSec: number;
  /** The measured window. */
  elapsedMs: number;
  /** CPU time of this Node process (user + system) over the measured window, in µs. */
  cpuUs: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time of this Node process (user + system) per operation over the measured window, in µs. */
  cpuUsPerOp: number;
  /** Operations that threw (not counted in `operations` nor in the latencies). */
  errors: number;
  /** The first error thrown, for the report. */
  firstError?: string;
}

/**
 * Runs `concurrency` workers back to back for warm-up plus duration and measures the second part:
 * completed operations per second and the latency of each operation.
 */
export async function runClosedLoop(options: ClosedLoopOptions): Promise<ClosedLoopResult> {
  const latencies = options.latencies ?? new LatencyRecorder();
  let measuring = false;
  let stopping = false;
  let operations = 0;
  let completed = 0;
  let errors = 0;
  let firstError: string | undefined;
  const worker = async (index: number) => {
    for (let sequence = 0; !stopping; sequence++) {
      const started = performance.now();
      try {
        await options.operation(index, sequence);
      } catch (error) {
        if (measuring) {
          errors++;
          firstError ??= (error as Error).message;
        }
        continue;
      }
      completed++;
      if (measuring && !stopping) {
        latencies.record(performance.now() - started);
        operations++;
      }
    }
  };
  const workers = Array.from({ length: options.concurrency }, (_, index) => worker(index));
  await sleep(options.warmupMs);
  measuring = true;
  const started = performance.now();
  const cpu = process.cpuUsage();
  await sleep(options.durationMs);
  stopping = true;
  const elapsedMs = performance.now() - started;
  const { user, system } = process.cpuUsage(cpu);
  await Promise.all(workers);
  return {
    operations,
    completed,
    opsPerSec: operations / (elapsedMs / 1000),
    elapsedMs,
    cpuUs: user + system,
    p50Ms: latencies.percentile(50),
    p99Ms: latencies.percentile(99),
    cpuUsPerOp: (user + system) / operations,
    errors,
    firstError,
  };
}

/** Runs `operation` `count` times one after another; latency of each. */
export async function runSequential(count: number, operation: (sequence: number) => Promise<unknown>) {
  const latencies = new LatencyRecorder();
  for (let sequence = 0; sequence < count; sequence++) {
    const started = performance.now();
    await operation(sequence);
    latencies.record(performance.now() - started);
  }
  return { p50Ms: latencies.percentile(50), p99Ms: latencies.percentile(99), latencies };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
