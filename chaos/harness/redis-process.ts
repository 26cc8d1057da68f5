import { Redis } from 'ioredis';
import { RESP2 } from '../../support/redis.js';
import { RedisServer } from '../../support/redis-server.js';
import type { ChaosDeployment } from './chaos-deployment.js';

/**
 * A redis-server of the deployment's own (its workers get `server.url`), stopped with the deployment,
 * and the parent's client to inspect it (it outlives restarts: ioredis reconnects). A scenario that
 * needs Redis down for a while, or stopped gracefully (SIGTERM: the AOF is flushed), calls
 * `server.kill(signal)`, then `server.restart()` later.
 */
export async function privateRedisFor(
  deployment: ChaosDeployment,
  args: string[] = [],
): Promise<{ server: RedisServer; inspector: Redis }> {
  const server = await RedisServer.start({ args });
  deployment.onClose(() => server.stop());
  const inspector = new Redis(server.url, { ...RESP2, maxRetriesPerRequest: 1 });
  // While the server is down the client reconnects; its errors are expected, not worth a log line each.
  inspector.on('error', () => undefined);
  deployment.onClose(() => inspector.disconnect());
  return { server, inspector };
}
