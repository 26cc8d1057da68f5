import { CounterRedisHandle } from '../../lib/redis/counter-redis.handle.js';
import { COUNTER_DEFAULTS } from '../../lib/counter.constants.js';
import { redisOption, type Topology } from './redis-targets.js';

/**
 * A client made exactly as the module makes its own (fail-fast: no offline queue, no resending, the
 * default command timeout), for baselines that must differ from the library only in what they send.
 */
export async function rawClient(topology: Topology) {
  const handle = CounterRedisHandle.from(redisOption(topology), COUNTER_DEFAULTS.redisCommandTimeoutMs);
  await handle.waitUntilReady();
  return handle;
}
