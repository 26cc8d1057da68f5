import { Logger } from '@nestjs/common';
import { RedisServer, RedisServerNotFoundError } from '../../support/redis-server.js';
import { probeRedis, redact } from './redis.probe.js';

/**
 * The Redis URL the app should use: `url` when a Redis answers there, else a throwaway redis-server's
 * (so that `npm start` works on a machine with redis-server installed but not running). Rejects with
 * one line saying how to get a Redis when neither works.
 */
export async function redisForTheApp(url: string): Promise<string> {
  const unreachable = await probeRedis(url);
  if (unreachable === undefined) return url;
  let server: RedisServer;
  try {
    server = await RedisServer.start({ directoryPrefix: 'judge-redis-', tiedToThisProcess: true });
  } catch (error) {
    if (error instanceof RedisServerNotFoundError) {
      throw new Error(`${unreachable} redis-server is not on the PATH either: install redis-server or set REDIS_URL.`, {
        cause: error,
      });
    }
    throw new Error(`${unreachable} A throwaway redis-server did not start either (${(error as Error).message}).`, {
      cause: error,
    });
  }
  Logger.log(
    `Nothing answers at ${redact(url)}: started a throwaway Redis at ${server.url} (pid ${server.pid}; ` +
      'loopback only, no persistence, stopped when the app exits).',
    'Redis',
  );
  return server.url;
}
