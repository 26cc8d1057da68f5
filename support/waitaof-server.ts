import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { RedisServer } from './redis-server.js';
import { RESP2 } from './redis.js';

/**
 * The server binary of the specs and chaos scenarios that need `WAITAOF` (Redis 7.2+, Valkey):
 * COUNTER_WAITAOF_SERVER, else the suites' server when one is named (COUNTER_REDIS_SERVER: Valkey, Redis 8),
 * else `valkey-server`, since the machine's Redis 7.0 has no WAITAOF.
 */
export const WAITAOF_SERVER = process.env.COUNTER_WAITAOF_SERVER ?? process.env.COUNTER_REDIS_SERVER ?? 'valkey-server';

/**
 * Why the suites that need WAITAOF_SERVER are skipped on this machine: it is not on the PATH, outside
 * CI. Undefined when they run; in CI (`CI` set) always, so that a missing server fails them.
 */
export function waitAofServerMissing(): string | undefined {
  if (process.env.CI) return undefined;
  const found = spawnSync('sh', ['-c', 'command -v "$1"', 'sh', WAITAOF_SERVER]).status === 0;
  if (found) return undefined;
  const reason = `${WAITAOF_SERVER} is not on the PATH: skipping the suites that need WAITAOF (install Valkey 8+, or set COUNTER_WAITAOF_SERVER to a Redis 7.2+ server).`;
  console.warn(reason);
  return reason;
}

/**
 * Whether the server's WAITAOF waits for the fsync under `appendfsync everysec`. Servers with
 * redis/redis#13793's bug answer at their next event-loop turn when the last fsync was less than a second
 * ago; a correct one waits for the next fsync, about a second after the last. Two writes and waits in a
 * row: the second answered within 300 ms means the bug (or a disk so slow that no claim could be trusted).
 */
export async function waitAofWaitsForFsync(inspector: Redis): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    await inspector.set('nestjs-counter-chaos:probe', '1', 'PX', 60_000);
    await inspector.call('waitaof', 1, 0, 5_000);
    await inspector.set('nestjs-counter-chaos:probe', '2', 'PX', 60_000);
    const started = performance.now();
    await inspector.call('waitaof', 1, 0, 5_000);
    if (performance.now() - started < 300) return false;
  }
  return true;
}

/**
 * A WAITAOF_SERVER on `port` with `appendonly yes` and `appendfsync everysec`, a client of it (`control`),
 * and whether its WAITAOF waits for the fsync there (`exact`). The caller stops both.
 */
export async function startEverysecServer(
  port: number,
): Promise<{ server: RedisServer; control: Redis; exact: boolean }> {
  const server = await RedisServer.start({
    port,
    binary: WAITAOF_SERVER,
    args: ['--appendonly', 'yes', '--appendfsync', 'everysec'],
  });
  const control = new Redis(server.url, RESP2);
  return { server, control, exact: await waitAofWaitsForFsync(control) };
}
