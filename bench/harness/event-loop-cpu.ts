import { existsSync, readFileSync } from 'node:fs';

/**
 * A reader of the CPU time (µs) this process's main thread, the one that runs the event loop, has used
 * so far; undefined where Linux's per-thread `schedstat` is absent. Unlike `process.cpuUsage()` it
 * leaves out V8's and libuv's helper threads: it is the time of the one thread whose work cannot
 * overlap, so a run takes at least this long.
 */
export function eventLoopCpu(): (() => number) | undefined {
  // The main thread's id is the process id.
  const path = `/proc/self/task/${process.pid}/schedstat`;
  if (!existsSync(path)) return undefined;
  return () => threadCpuUs(path);
}

/** A thread's time on a CPU so far, µs, from its `schedstat` file (whose first field is that time in ns). */
export function threadCpuUs(schedstatPath: string): number {
  return Number(readFileSync(schedstatPath, 'utf8').split(' ')[0]) / 1000;
}
