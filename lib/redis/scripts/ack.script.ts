import { LIVE_VALUE_LUA } from './live-value.lua.js';

/**
 * Acknowledges a batch the database has committed: its in-flight deltas become part of the base.
 *
 * KEYS[1] batch hash, KEYS[2] lease, KEYS[3] generation, KEYS[4] dirty set (all one slot).
 * ARGV[1] row key prefix, ARGV[2] batch id, ARGV[3] TTL of clean rows (seconds), ARGV[4] lease token,
 * ARGV[5] '1' to release the lease, ARGV[6..] encoded ids of rows missing from the database.
 * Returns 1 when acknowledged, 0 when the batch was already acknowledged (or lost with Redis data).
 *
 * Invariant: b + p + f of every row is unchanged (f moves into b), the generation moves so that a seed
 * racing this ack retries, and a missing row's hash is deleted with whatever it still had pending.
 */
export const ACK_LUA = LIVE_VALUE_LUA + `
local function release()
  if ARGV[5] == '1' and redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('DEL', KEYS[2]) end
end
if redis.call('HGET', KEYS[1], '#id') ~= ARGV[2] then
  release()
  return 0
end
local missing = {}
for i = 6, #ARGV do
  missing[ARGV[i]] = true
  redis.call('DEL', ARGV[1] .. ARGV[i])
  redis.call('ZREM', KEYS[4], ARGV[i])
end
local entries = redis.call('HGETALL', KEYS[1])
-- The batch's deltas by row.
local deltas, rows = {}, {}
for i = 1, #entries, 2 do
  local field = entries[i]
  if string.sub(field, 1, 1) ~= '#' then
    local nl = string.find(field, '\\n', 1, true)
    local id = string.sub(field, 1, nl - 1)
    if not missing[id] then
      if not deltas[id] then
        deltas[id] = {}
        rows[#rows + 1] = id
      end
      deltas[id][string.sub(field, nl + 1)] = entries[i + 1]
    end
  end
end
-- Below 2^52 on both sides a sum of doubles is exact; beyond, HINCRBY adds in 64-bit integers.
local SAFE = 4503599627370496
for _, id in ipairs(rows) do
  local row = ARGV[1] .. id
  local batch = deltas[id]
  local fields = redis.call('HGETALL', row)
  local bases, done, unflushed = {}, {}, false
  for i = 1, #fields, 2 do
    local kind, counter = string.sub(fields[i], 1, 2), string.sub(fields[i], 3)
    local delta = batch[counter]
    if kind == 'b:' and delta then
      local base, change = tonumber(fields[i + 1]), tonumber(delta)
      if math.abs(base) < SAFE and math.abs(change) < SAFE then
        bases[#bases + 1] = fields[i]
        bases[#bases + 1] = exact(base + change)
      else
        redis.call('HINCRBY', row, fields[i], delta)
      end
    elseif kind == 'f:' and delta then
      done[#done + 1] = fields[i]
    elseif kind == 'p:' or kind == 'f:' then
      unflushed = true
    end
  end
  if #bases > 0 then redis.call('HSET', row, unpack(bases)) end
  if #done > 0 then redis.call('HDEL', row, unpack(done)) end
  if not unflushed then redis.call('EXPIRE', row, ARGV[3]) end
end
redis.call('DEL', KEYS[1])
redis.call('INCR', KEYS[3])
release()
return 1
`;
