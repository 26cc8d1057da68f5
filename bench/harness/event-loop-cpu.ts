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
  // The first field is the time on a CPU, in ns.
  return () => Number(readFileSync(path, 'utf8').split(' ')[0]) / 1000;
}
