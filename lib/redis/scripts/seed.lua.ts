/** The seed script: see the comment at its top. */
export const SEED_LUA = String.raw`
--[[
Loads rows into Redis: stores the live values of rows that have none yet, the database value plus the
changes the shard holds for the row that no database has yet (pending, or given back by a flusher that
did not know the counter), and returns their live values. Rows of one or more shards in one call (on a
cluster the caller sends one call per slot).

KEYS, per shard: its generation, batch hash, pending hash and hash of unknown counters' changes
(give-back.lua.ts), then the hashes of its n rows.
ARGV[1] row TTL (seconds); then per shard, in the order of KEYS: the generation read before the
database was queried, n, the number k of counters, the k counter names, the n encoded row ids, then k
database values per row, in row order.
Returns, per shard: 0 when its generation moved (a batch was acknowledged while the database was read,
so the values may already include or miss it: read again); otherwise 1 followed by k live values per
row, nil for each counter of a row that lacks one while the shard's batch in flight holds a change of
it (that change may or may not be in the database yet: retry after the ack).

Invariant: a live value is only ever set from a database value read while no acknowledgement happened
in the shard and no change of the row's counter was in flight, plus the changes no claim has taken yet
(those are in no database), and never replaces an existing one: so no flushed batch is counted twice
or missed.
]]

--@include numbers

-- The sum of integers given as text when every step of it is exact as a double, else nil (the caller then
-- lets HINCRBY add in 64 bits).
local function exact_sum(...)
  local sum = 0
  for _, text in ipairs({ ... }) do
    local number = tonumber(text)
    sum = sum + number
    if math.abs(number) > MAX_SAFE or math.abs(sum) > MAX_SAFE then return nil end
  end
  return exact(sum)
end

local ttl, out, at, k = ARGV[1], {}, 2, 1
while k <= #KEYS do
  local generation, batch, pending, unknown = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local seen, n, width = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local counters, names = {}, {}
  for j = 1, width do
    counters[j] = ARGV[at + 2 + j]
    names[j] = 'v:' .. counters[j]
  end
  local ids = at + 3 + width
  local values = ids + n
  if (redis.call('GET', generation) or '0') ~= seen then
    out[#out + 1] = 0
  else
    out[#out + 1] = 1
    local inflight = redis.call('EXISTS', batch) == 1
    local given = redis.call('EXISTS', unknown) == 1
    for i = 0, n - 1 do
      local row, id = KEYS[k + 4 + i], ARGV[ids + i]
      local live = redis.call('HMGET', row, unpack(names))
      -- The counters the row lacks, and their changes' fields in the shard's hashes.
      local missing, fields = {}, {}
      for j = 1, width do
        if not live[j] then
          missing[#missing + 1] = j
          fields[#fields + 1] = id .. ' ' .. counters[j]
        end
      end
      local loadable = true
      if #missing > 0 and inflight then
        for _, delta in ipairs(redis.call('HMGET', batch, unpack(fields))) do
          if delta then loadable = false end
        end
      end
      if loadable and #missing > 0 then
        local waiting = redis.call('HMGET', pending, unpack(fields))
        local returned = given and redis.call('HMGET', unknown, unpack(fields)) or {}
        for m, j in ipairs(missing) do
          local base, p, g = ARGV[values + i * width + j - 1], waiting[m] or '0', returned[m] or '0'
          local sum = exact_sum(base, p, g)
          if sum then
            redis.call('HSET', row, names[j], sum)
            live[j] = sum
          else
            redis.call('HSET', row, names[j], base)
            redis.call('HINCRBY', row, names[j], p)
            redis.call('HINCRBY', row, names[j], g)
            live[j] = redis.call('HGET', row, names[j])
          end
        end
        redis.call('EXPIRE', row, ttl)
      end
      for j = 1, width do out[#out + 1] = loadable and live[j] or false end
    end
  end
  at = values + n * width
  k = k + 4 + n
end
return out
`;
