import { LIVE_VALUE_LUA } from './live-value.lua.js';

/**
 * Reads the live values of rows of one or more shards, in one call: on a single Redis every shard a
 * page touches is read at once (the per-call cost of a script dwarfs its reads); on a cluster the
 * caller sends one call per slot, so every key of a call is in one slot there.
 *
 * KEYS, per shard: its generation, then its row hashes.
 * ARGV, per shard (same order): n (rows), k (counters), then the k counter names.
 * Returns, per shard: its generation, then v(1,1) … v(1,k), …, v(n,k) where v = b + p + f, or nil when
 * the counter has no base yet, as decimal strings (see live-value.lua.ts). The generation lets a later
 * seed detect a flush acknowledged in between.
 */
export const READ_LUA = LIVE_VALUE_LUA + `
local out, key, arg = {}, 1, 1
while arg <= #ARGV do
  local rows, k = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1])
  local fields = {}
  for j = 1, k do
    local counter = ARGV[arg + 1 + j]
    fields[3 * j - 2] = 'b:' .. counter
    fields[3 * j - 1] = 'p:' .. counter
    fields[3 * j] = 'f:' .. counter
  end
  arg = arg + 2 + k
  out[#out + 1] = redis.call('GET', KEYS[key]) or '0'
  for i = key + 1, key + rows do
    local values = redis.call('HMGET', KEYS[i], unpack(fields))
    for j = 1, k do
      local base = values[3 * j - 2]
      if base then
        out[#out + 1] = exact(live_value(base, values[3 * j - 1], values[3 * j]))
      else
        out[#out + 1] = false
      end
    end
  end
  key = key + 1 + rows
end
return out
`;
