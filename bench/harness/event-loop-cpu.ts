import { existsSync, readFileSync } from 'node:fs';

/**
 * A reader of the CPU time (µs) this process's main thread, the one that runs the event loop, has used
 * so far; undefined where Linux's per-thread `schedstat` is absent. Unlike `process.cpuUsage()` it
 * leaves out V8's and libuv's helper threads: it is the time of the one thread whose work cannot
 * overlap, so a run takes at least this long.
 */
export function eventLoopCpu(): (() => number) | undefined {
  return mainThreadSchedstat(0);
}

/**
 * A reader of the time (µs) this process's main thread has spent so far ready to run but waiting for a
 * CPU (another thread had it); undefined where Linux's per-thread `schedstat` is absent. On a machine of
 * two cores a flush's Redis (its main and lazy-free threads) and V8's compiler threads run beside the
 * event loop: this is what they took from it.
 */
export function eventLoopRunQueueWait(): (() => number) | undefined {
  return mainThreadSchedstat(1);
}

/** A reader of field `index` of the main thread's `schedstat` (see `schedstatField`); undefined where absent. */
function mainThreadSchedstat(index: number): (() => number) | undefined {
  // The main thread's id is the process id.
  const path = `/proc/self/task/${process.pid}/schedstat`;
  if (!existsSync(path)) return undefined;
  return () => schedstatField(path, index);
}

/** A thread's time on a CPU so far, µs, from its `schedstat` file (whose first field is that time in ns). */
export function threadCpuUs(schedstatPath: string): number {
  return schedstatField(schedstatPath, 0);
}

/** Field `index` of a `schedstat` file, µs: 0 is the time on a CPU, 1 the time waiting for one (both ns). */
function schedstatField(schedstatPath: string, index: number): number {
  return Number(readFileSync(schedstatPath, 'utf8').split(' ')[index]) / 1000;
}
