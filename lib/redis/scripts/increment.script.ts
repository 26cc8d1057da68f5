import { LIVE_VALUE_LUA } from './live-value.lua.js';

/**
 * Changes one counter of one row.
 *
 * KEYS[1] row hash, KEYS[2] the shard's dirty set (sorted by when each row became dirty), KEYS[3] the shard's generation (all one slot).
 * ARGV[1] encoded row id, ARGV[2] counter, ARGV[3] delta, ARGV[4] min, ARGV[5] max.
 * Returns {1, newValue} when applied; {0, generation} when the row has no base yet (nothing written:
 * the caller seeds it and calls again); {2, currentValue} when the new value would leave [min, max]
 * (nothing written). Values are decimal strings (see live-value.lua.ts).
 *
 * Invariant: live value = b + p + f, and every row with a `p:` field is in the dirty set and has no TTL,
 * so a pending delta can neither expire nor be missed by the next claim. The invariant is also what
 * keeps the common case short: a counter that already has a `p:` field is in the dirty set and has no
 * TTL, so only its first change pays for the dirty-set check and the PERSIST (every redis.call costs
 * about as much as the command it runs).
 */
export const INCREMENT_LUA = LIVE_VALUE_LUA + `
local counter = ARGV[2]
local values = redis.call('HMGET', KEYS[1], 'b:' .. counter, 'p:' .. counter, 'f:' .. counter)
if not values[1] then
  return {0, redis.call('GET', KEYS[3]) or '0'}
end
local current = live_value(values[1], values[2], values[3])
local delta = tonumber(ARGV[3])
local nextValue = current + delta
if nextValue < tonumber(ARGV[4]) or nextValue > tonumber(ARGV[5]) then
  return {2, exact(current)}
end
if delta ~= 0 then
  redis.call('HINCRBY', KEYS[1], 'p:' .. counter, ARGV[3])
  if not values[2] then
    if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
      local now = redis.call('TIME')
      redis.call('ZADD', KEYS[2], now[1] * 1000 + math.floor(now[2] / 1000), ARGV[1])
    end
    redis.call('PERSIST', KEYS[1])
  end
end
return {1, exact(nextValue)}
`;
