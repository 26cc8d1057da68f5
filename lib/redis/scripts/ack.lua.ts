/** The acknowledgement script: see the comment at its top. */
export const ACK_LUA = String.raw`#!lua flags=allow-oom
--[[
Acknowledges a batch the database has committed: the batch hash, which held its changes in flight,
goes, and the generation moves on, so that a load that read the database before this ack retries
(seed.lua.ts). Rows are not touched, except those missing from the database, whose hashes go along
with whatever changes they still had pending.

KEYS: the shard's batch hash, lease, generation, dirty set and pending hash, then the hash of each row
missing from the database; one slot.
ARGV[1] batch id, ARGV[2] lease token, ARGV[3] '1' to give the lease back, ARGV[4] the number k of the
entity's counters, ARGV[5..4+k] their names (a windowed one as '<name>@<letters>', see
buckets.lua.ts), then the encoded ids of the missing rows (as in KEYS).
Returns 1 when acknowledged, 0 when the batch was acknowledged already (or lost with Redis's data).
Runs on a Redis full under noeviction (allow-oom): the flush is what drains it, and this script adds
at most a lease or a few fields while the flush frees whole batches.
]]

local batch, lease, generation, dirty, pending = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local batchId, token, release, k = ARGV[1], ARGV[2], ARGV[3] == '1', tonumber(ARGV[4])

--@include buckets

local function give_lease_back()
  if release and redis.call('GET', lease) == token then redis.call('DEL', lease) end
end

if redis.call('HGET', batch, '#id') ~= batchId then
  give_lease_back()
  return 0
end
for m = 6, #KEYS do
  local id = ARGV[4 + k + m - 5]
  redis.call('DEL', KEYS[m])
  -- Changes made since the claim, and the buckets they added to since the row's score (none if it has
  -- none: it is not dirty).
  local since = redis.call('ZSCORE', dirty, id)
  redis.call('ZREM', dirty, id)
  local fields = {}
  for c = 5, 4 + k do
    local name, letters = split_windows(ARGV[c])
    fields[#fields + 1] = id .. ' ' .. name
    if letters and since then bucket_fields(fields, id .. ' ' .. name, letters, tonumber(since)) end
  end
  for _, field in ipairs(fields) do redis.call('HDEL', pending, field) end
end
-- UNLINK frees a batch of thousands of fields off Redis's main thread.
redis.call('UNLINK', batch)
redis.call('INCR', generation)
give_lease_back()
return 1
`;
