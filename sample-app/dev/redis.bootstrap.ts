import { Logger } from '@nestjs/common';
import { RedisServer, RedisServerNotFoundError } from '../../support/redis-server.js';
import { probeRedis, redact } from './redis.probe.js';

/** The Redis the app uses, and whether the launcher started it for this run. */
export interface RedisForTheApp {
  url: string;
  throwaway: boolean;
}

/**
 * The Redis the app should use: the one at `url` when it answers, else a throwaway redis-server
 * (so that `npm start` works on a machine with redis-server installed but not running). Rejects with
 * one line saying how to get a Redis when neither works.
 */
export async function redisForTheApp(url: string): Promise<RedisForTheApp> {
  const unreachable = await probeRedis(url);
  if (unreachable === undefined) return { url, throwaway: false };
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
  return { url: server.url, throwaway: true };
}
