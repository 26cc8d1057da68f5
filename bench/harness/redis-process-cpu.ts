import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

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
    let ns = 0;
    for (const tid of readdirSync(tasks)) {
      // The first field is the thread's time on a CPU. Redis's threads live as long as the server; one
      // that ended between listing and reading is skipped.
      try {
        ns += Number(readFileSync(`${tasks}/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        continue;
      }
    }
    return ns / 1000;
  };
}
