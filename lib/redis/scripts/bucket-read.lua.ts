/** The bucket read script: see the comment at its top. */
export const BUCKET_READ_LUA = String.raw`
--[[
Reads the changes of one row's buckets that the database may not have yet, for a live window
(CounterWindows): with the shard's generation and batch id, so that the caller can tell whether a flush
moved any of them while it read the database.

KEYS: the shard's generation, batch hash, pending hash and hash of unknown counters' changes; one slot.
ARGV: the row's bucket fields' common start ('<encoded id> <counter>@<letter>', buckets.lua.ts), the
buckets' length in seconds, the first bucket's start and the end of the last (Unix seconds).
Returns {generation ('' if none), batch id ('' if none), the batch's number of fields (a give-back
moves fields out of it under the same id), then for each bucket with a change: its start,
its change pending or given back (give-back.lua.ts), its change in the batch in flight}. The pending
and given-back changes are in no database; the batch's are once the ledger has its id.
Cost: per hash, the fewer of its fields and the window's buckets, so a year of hours costs no more than
the changes waiting.
]]

local generation, batch, pending, unknown = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prefix, length, first, last = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local buckets = (last - first) / length
local changes = {}

-- Adds the changes of 'hash' in the window to slot 'slot' (1: waiting, 2: in flight) of 'changes'.
local function add(hash, slot)
  if redis.call('HLEN', hash) <= buckets then
    local entries = redis.call('HGETALL', hash)
    for i = 1, #entries, 2 do
      local field = entries[i]
      if string.sub(field, 1, #prefix) == prefix then
        local start = tonumber(string.sub(field, #prefix + 1))
        if start and start >= first and start < last then
          changes[start] = changes[start] or { 0, 0 }
          changes[start][slot] = changes[start][slot] + tonumber(entries[i + 1])
        end
      end
    end
    return
  end
  -- HMGET takes a few thousand fields at most (Lua's stack).
  for from = first, last - length, 2000 * length do
    local fields = {}
    for start = from, math.min(from + 1999 * length, last - length), length do
      fields[#fields + 1] = prefix .. string.format('%d', start)
    end
    local values = redis.call('HMGET', hash, unpack(fields))
    for i = 1, #fields do
      if values[i] then
        local start = from + (i - 1) * length
        changes[start] = changes[start] or { 0, 0 }
        changes[start][slot] = changes[start][slot] + tonumber(values[i])
      end
    end
  end
end

add(pending, 1)
add(unknown, 1)
add(batch, 2)
local out = { redis.call('GET', generation) or '', redis.call('HGET', batch, '#id') or '', redis.call('HLEN', batch) }
for start, change in pairs(changes) do
  out[#out + 1] = start
  out[#out + 1] = change[1]
  out[#out + 1] = change[2]
end
return out
`;
