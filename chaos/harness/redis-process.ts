// Signals to the redis-server behind a URL. PrivateRedis (test/support) can only restart or stop its
// server, both at once; a scenario that needs Redis down for a while, or stopped gracefully (SIGTERM:
// the AOF is flushed), sends the signal itself and calls `restart()` later, which then only starts a
// new server on the same port and directory.
import { Redis } from 'ioredis';
import { PrivateRedis } from '../../test/support/private-redis.js';
import { RESP2 } from '../../test/support/redis.js';
import type { ChaosDeployment } from './chaos-deployment.js';
import { sleep } from './time.js';

/**
 * A redis-server of the deployment's own (its workers get `server.url`), stopped with the deployment,
 * and the parent's client to inspect it (it outlives restarts: ioredis reconnects).
 */
export async function privateRedisFor(
  deployment: ChaosDeployment,
  args: string[] = [],
): Promise<{ server: PrivateRedis; inspector: Redis }> {
  const server = await PrivateRedis.start(args);
  deployment.onClose(() => server.stop());
  const inspector = new Redis(server.url, { ...RESP2, maxRetriesPerRequest: 1 });
  // While the server is down the client reconnects; its errors are expected, not worth a log line each.
  inspector.on('error', () => undefined);
  deployment.onClose(() => inspector.disconnect());
  return { server, inspector };
}

/** The pid of the server behind `url`, from `INFO server`. */
export async function redisServerPid(url: string): Promise<number> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...RESP2 });
  try {
    await client.connect();
    const info = await client.info('server');
    const pid = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0) throw new Error(`no process_id in INFO of ${url}`);
    return pid;
  } finally {
    client.disconnect();
  }
}

/**
 * Sends `signal` to the server behind `url` and resolves once its process is gone, with when the signal
 * was sent and when the process was seen gone (epoch ms).
 */
export async function stopRedisProcess(
  url: string,
  signal: 'SIGKILL' | 'SIGTERM',
  timeoutMs = 10_000,
): Promise<{ signalledAt: number; goneAt: number }> {
  const pid = await redisServerPid(url);
  const signalledAt = Date.now();
  process.kill(pid, signal);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') return { signalledAt, goneAt: Date.now() };
      throw error;
    }
    if (Date.now() > deadline) throw new Error(`redis-server ${pid} still runs ${timeoutMs} ms after ${signal}`);
    await sleep(5);
  }
}
