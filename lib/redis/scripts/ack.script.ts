import { ROW_HELPERS_LUA } from './row-helpers.lua.js';

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
export const ACK_LUA = ROW_HELPERS_LUA + `
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
local seen, touched = {}, {}
for i = 1, #entries, 2 do
  local field = entries[i]
  if string.sub(field, 1, 1) ~= '#' then
    local nl = string.find(field, '\\n', 1, true)
    local id = string.sub(field, 1, nl - 1)
    if not missing[id] then
      local counter = string.sub(field, nl + 1)
      local row = ARGV[1] .. id
      if redis.call('HEXISTS', row, 'b:' .. counter) == 1 then
        redis.call('HINCRBY', row, 'b:' .. counter, entries[i + 1])
      end
      redis.call('HDEL', row, 'f:' .. counter)
      if not seen[id] then
        seen[id] = true
        touched[#touched + 1] = row
      end
    end
  end
end
for i = 1, #touched do expire_if_clean(touched[i], ARGV[3]) end
redis.call('DEL', KEYS[1])
redis.call('INCR', KEYS[3])
release()
return 1
`;
