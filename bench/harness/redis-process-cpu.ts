import { existsSync, readdirSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { threadCpuUs } from './event-loop-cpu.js';

/**
 * A reader of the CPU time (µs) the Redis server process has used so far, over all its threads: its
 * main thread's execution and network I/O, which INFO commandstats leaves out, and its background
 * threads (the lazy-free one frees what `UNLINK` deleted). Summed from each thread's
 * `/proc/<pid>/task/<tid>/schedstat` (ns), as `/proc/<pid>/stat` counts in ticks of 10 ms, too coarse
 * for a flush of 0.1 s. Undefined when the server is not a process of this machine (`/proc/<pid>` absent).
 */
export async function redisProcessCpu(client: Redis): Promise<(() => number) | undefined> {
  const pid = /process_id:(\d+)/.exec(await client.info('server'))?.[1];
  const tasks = `/proc/${pid}/task`;
  if (!pid || !existsSync(tasks)) return undefined;
  return () => {
    let us = 0;
    for (const tid of readdirSync(tasks)) {
      // Redis's threads live as long as the server; one that ended between listing and reading is skipped.
      try {
        us += threadCpuUs(`${tasks}/${tid}/schedstat`);
      } catch {
        continue;
      }
    }
    return us;
  };
}
