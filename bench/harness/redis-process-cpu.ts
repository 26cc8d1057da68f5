import { existsSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

/** Linux reports process CPU time in clock ticks of 10 ms (USER_HZ = 100). */
const US_PER_TICK = 10_000;

/**
 * A reader of the CPU time (user + system, in µs) the Redis server process has used so far: its own
 * execution and its network I/O, which INFO commandstats leaves out. Undefined when the server is not a
 * process of this machine (`/proc/<pid>` absent).
 */
export async function redisProcessCpu(client: Redis): Promise<(() => number) | undefined> {
  const pid = /process_id:(\d+)/.exec(await client.info('server'))?.[1];
  const path = `/proc/${pid}/stat`;
  if (!pid || !existsSync(path)) return undefined;
  return () => {
    // Fields after the command name, which is in parentheses and may contain spaces.
    const fields = readFileSync(path, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * US_PER_TICK;
  };
}
