import { LIVE_VALUE_LUA } from './live-value.lua.js';

/**
 * Reads the live values of some rows of one shard.
 *
 * KEYS[1] the shard's generation, KEYS[2..n+1] row hashes of that shard (all one slot).
 * ARGV counter names (k of them).
 * Returns {generation, v(1,1) … v(1,k), …, v(n,k)} where v = b + p + f, or nil when the counter has
 * no base yet, as decimal strings (see live-value.lua.ts). The generation lets a later seed detect a
 * flush acknowledged in between.
 */
export const READ_LUA = LIVE_VALUE_LUA + `
local fields = {}
for j = 1, #ARGV do
  fields[#fields + 1] = 'b:' .. ARGV[j]
  fields[#fields + 1] = 'p:' .. ARGV[j]
  fields[#fields + 1] = 'f:' .. ARGV[j]
end
local out = {redis.call('GET', KEYS[1]) or '0'}
for i = 2, #KEYS do
  local values = redis.call('HMGET', KEYS[i], unpack(fields))
  for j = 1, #ARGV do
    local base = values[3 * j - 2]
    if base then
      out[#out + 1] = exact(live_value(base, values[3 * j - 1], values[3 * j]))
    else
      out[#out + 1] = false
    end
  end
end
return out
`;
