/** The bucket read script: see the comment at its top. */
export const BUCKET_READ_LUA = String.raw`
--[[
Reads the changes of buckets that the database may not have yet, for a live window (CounterWindows):
with the shard's generation and batch id, so that the caller can tell whether a flush moved any of them
while it read the database.

KEYS: the shard's generation, batch hash, pending hash and hash of unknown counters' changes; one slot.
ARGV: bucket fields ('<encoded id> <counter>@<letter><start>', buckets.lua.ts).
Returns {generation ('' if none), batch id ('' if none), then per field its change pending, its change
given back (give-back.lua.ts), its change in the batch in flight}, each nil where there is none. The
pending and given-back changes are in no database; the batch's are once the ledger has its id.
]]

local generation, batch, pending, unknown = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local out = { redis.call('GET', generation) or '', redis.call('HGET', batch, '#id') or '' }
-- HMGET takes a few thousand fields at most (Lua's stack).
for first = 1, #ARGV, 2000 do
  local fields = { unpack(ARGV, first, math.min(first + 1999, #ARGV)) }
  local waiting = redis.call('HMGET', pending, unpack(fields))
  local given = redis.call('HMGET', unknown, unpack(fields))
  local flight = redis.call('HMGET', batch, unpack(fields))
  for i = 1, #fields do
    out[#out + 1] = waiting[i]
    out[#out + 1] = given[i]
    out[#out + 1] = flight[i]
  end
end
return out
`;
