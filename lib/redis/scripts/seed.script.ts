import { LIVE_VALUE_LUA } from './live-value.lua.js';
import { ROW_HELPERS_LUA } from './row-helpers.lua.js';

/**
 * Stores database values as the base of rows that have none yet, and returns their live values.
 *
 * KEYS[1] the shard's generation, KEYS[2..n+1] row hashes of that shard (all one slot).
 * ARGV[1] the generation read before the database was queried, ARGV[2] TTL of clean rows (seconds),
 * ARGV[3] k, ARGV[4..3+k] counter names, then k database values per row, in KEYS order.
 * Returns nil when the generation moved (a batch was acknowledged while the database was read, so the
 * values may already include or miss it: read again); otherwise {v(1,1) … v(n,k)} with live values,
 * nil for a row that has a batch in flight for a counter without base (retry later).
 *
 * Invariant: a base is only ever set from a database value read while no acknowledgement happened in
 * the shard, and never replaces an existing base, so no flushed batch is counted twice or missed.
 */
export const SEED_LUA = ROW_HELPERS_LUA + LIVE_VALUE_LUA + `
if (redis.call('GET', KEYS[1]) or '0') ~= ARGV[1] then
  return false
end
local ttl = ARGV[2]
local k = tonumber(ARGV[3])
local out = {}
for i = 2, #KEYS do
  local row = KEYS[i]
  local offset = 3 + k + (i - 2) * k
  local seedable = true
  for j = 1, k do
    local counter = ARGV[3 + j]
    if redis.call('HEXISTS', row, 'b:' .. counter) == 0 and redis.call('HEXISTS', row, 'f:' .. counter) == 1 then
      seedable = false
    end
  end
  for j = 1, k do
    local counter = ARGV[3 + j]
    if seedable then
      redis.call('HSETNX', row, 'b:' .. counter, ARGV[offset + j])
      local values = redis.call('HMGET', row, 'b:' .. counter, 'p:' .. counter, 'f:' .. counter)
      out[#out + 1] = exact(live_value(values[1], values[2], values[3]))
    else
      out[#out + 1] = false
    end
  end
  if seedable then expire_if_clean(row, ttl) end
end
return out
`;
