/**
 * Stores database values as the live values of rows that have none yet, and returns their live values,
 * for rows of one or more shards in one call: on a single Redis every shard a page seeds goes at once
 * (a script call costs far more than the writes in it); on a cluster the caller sends one call per
 * slot, so every key of a call is in one slot there.
 *
 * KEYS, per shard: its generation, its batch hash.
 * ARGV[1] TTL of clean rows (seconds); then per shard (same order): the generation read before the
 * database was queried, its row key prefix, the number n of rows, the number k of counters, the k
 * counter names, the n encoded row ids, then k database values per row, in id order. Row keys are
 * built here from the prefix, as in read.script.ts (the same slot as the shard's declared keys).
 * Returns, per shard (same order): 0 when its generation moved (a batch was acknowledged while the
 * database was read, so the values may already include or miss it: read again); otherwise 1 followed
 * by the n × k live values, nil for a row that lacks a counter while the shard's batch in flight holds
 * it (its deltas may or may not be in the database yet: retry after the ack).
 *
 * Invariant: a live value is only ever set from a database value read while no acknowledgement happened
 * in the shard and no delta of the row was in flight, and never replaces an existing one, so no flushed
 * batch is counted twice or missed.
 */
export const SEED_LUA = `
local ttl, out, at = ARGV[1], {}, 2
for key = 1, #KEYS, 2 do
  local generation, prefix, n, k = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
  local names = {}
  for j = 1, k do names[j] = 'v:' .. ARGV[at + 3 + j] end
  local firstId = at + 4 + k
  local firstValue = firstId + n
  at = firstValue + n * k
  if (redis.call('GET', KEYS[key]) or '0') ~= generation then
    out[#out + 1] = 0
  else
    out[#out + 1] = 1
    -- The batch's rows, one line each, starting with the encoded id and a space (see claim.script.ts).
    local inflight = redis.call('HGET', KEYS[key + 1], '#entries')
    if inflight then inflight = '\\n' .. inflight end
    for i = 0, n - 1 do
      local id = ARGV[firstId + i]
      local row = prefix .. id
      local offset = firstValue + i * k - 1
      local values = redis.call('HMGET', row, unpack(names))
      local complete = true
      for j = 1, k do
        if not values[j] then complete = false end
      end
      local seedable = complete or not inflight or not string.find(inflight, '\\n' .. id .. ' ', 1, true)
      for j = 1, k do
        if not seedable then
          out[#out + 1] = false
        elseif values[j] then
          out[#out + 1] = values[j]
        else
          redis.call('HSET', row, names[j], ARGV[offset + j])
          out[#out + 1] = ARGV[offset + j]
        end
      end
      -- A row without pending deltas is a cache of database values, and may expire.
      if not complete and seedable then
        local fields = redis.call('HKEYS', row)
        local pending = false
        for _, field in ipairs(fields) do
          if string.sub(field, 1, 2) == 'p:' then pending = true end
        end
        if not pending then redis.call('EXPIRE', row, ttl) end
      end
    end
  end
end
return out
`;
