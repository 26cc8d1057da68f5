/**
 * What shards have waiting for the database: every shard of a single Redis in one call (up to
 * MAX_SHARDS_PER_STATUS_CALL), those of one slot per call on a cluster. A flush starts with it on every
 * instance, every second, busy or not. One call per shard, 192 calls for three entities of 64 shards,
 * took 1.4–1.5 ms of Redis and 1.9–3.1 ms of the app's CPU per flush; in one call, 0.63–0.70 ms and
 * 0.45–0.91 ms (measured alone, 200 of each, half the shards dirty).
 *
 * KEYS: per shard, its dirty set, batch hash and generation (keys of one slot per call on a cluster).
 * Returns one string, which ioredis reads as one reply instead of six per shard: Redis's clock (ms), then
 * a line per shard: "<dirty rows>,<when the oldest became dirty (ms)>,<rows in the claimed batch>,<when
 * the batch's oldest row became dirty (ms)>,<generation>", each field empty where there is none (the
 * generation when its key is missing). Times are Redis's, so ages do not depend on the app servers' clocks.
 */
export const STATUS_LUA = `
local now = redis.call('TIME')
local lines = { tostring(now[1] * 1000 + math.floor(now[2] / 1000)) }
for i = 1, #KEYS, 3 do
  local dirty = redis.call('ZCARD', KEYS[i])
  local oldest = ''
  if dirty > 0 then oldest = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')[2] end
  local batch = redis.call('HMGET', KEYS[i + 1], '#rows', '#since')
  lines[#lines + 1] = dirty .. ',' .. oldest .. ',' .. (batch[1] or '') .. ',' .. (batch[2] or '') .. ',' ..
    (redis.call('GET', KEYS[i + 2]) or '')
end
return table.concat(lines, '\\n')
`;
