import { expect } from 'vitest';
import type { LogLine } from './recording-logger.js';

// The lines an operator reads when Redis goes away and comes back (lib/flush/outage.log.ts,
// lib/redis/counter-redis.handle.ts).
/** The line the module-made client logs once when its connection drops (lib/redis/counter-redis.handle.ts). */
export const CONNECTION_LOST: LogLine = {
  level: 'warn',
  context: 'CounterRedis',
  message: expect.stringMatching(
    /^Redis connection lost \(.+\); counter reads fall back to the database and changes fail until it returns\.$/,
  ) as unknown as string,
};
export const CONNECTION_RESTORED: LogLine = {
  level: 'log',
  context: 'CounterRedis',
  message: 'Redis connection restored.',
};

/** The one line that says Redis went away: its reason (the client's state, as it refused to send) and no stack. */
export const REDIS_UNREACHABLE: LogLine = {
  level: 'error',
  context: 'CounterFlush',
  message: expect.stringMatching(
    /^Redis became unreachable \(connection is (re)?connecting\)\. Counter changes fail and reads fall back to the database until it returns; flushes retry with backoff, logged at debug level\.$/,
  ) as unknown as string,
  stack: undefined,
};
