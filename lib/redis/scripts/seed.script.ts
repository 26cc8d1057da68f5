import { EXACT_NUMBER_LUA } from './exact-number.lua.js';

/**
 * Stores live values of rows that have none yet: the database value plus the changes the shard holds
 * for it that no database has yet (pending, or given back by a flusher that did not know the counter),
 * and returns their live values, for rows of one or more shards in one call: on a single
 * Redis every shard a page seeds goes at once (a script call costs far more than the writes in it); on
 * a cluster the caller sends one call per slot, so every key of a call is in one slot there.
 *
 * KEYS, per shard: its generation, its batch hash, its pending hash, its hash of changes of counters
 * unknown to a flusher (see give-back.script.ts).
 * ARGV[1] TTL of rows (seconds); then per shard (same order): the generation read before the
 * database was queried, its row key prefix, the number n of rows, the number k of counters, the k
 * counter names, the n encoded row ids, then k database values per row, in id order. Row keys are
 * built here from the prefix, as in read.script.ts (the same slot as the shard's declared keys).
 * Returns, per shard (same order): 0 when its generation moved (a batch was acknowledged while the
 * database was read, so the values may already include or miss it: read again); otherwise 1 followed
 * by the n × k live values, nil for each counter of a row that lacks one while the shard's batch in
 * flight holds a delta of it (that delta may or may not be in the database yet: retry after the ack).
 *
 * Invariant: a live value is only ever set from a database value read while no acknowledgement happened
 * in the shard and no delta of the row's counter was in flight, plus the deltas no claim has taken yet
 * (those are in no database), and never replaces an existing one: so no flushed batch is counted twice
 * or missed, and a row may expire with deltas pending.
 */
export const SEED_LUA =
  EXACT_NUMBER_LUA +
  `
local ttl, out, at = ARGV[1], {}, 2
for key = 1, #KEYS, 4 do
  local generation, prefix, n, k = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
  local names = {}
  for j = 1, k do names[j] = 'v:' .. ARGV[at + 3 + j] end
  local firstId = at + 4 + k
  local firstValue = firstId + n
  local counters = at + 3
  at = firstValue + n * k
  if (redis.call('GET', KEYS[key]) or '0') ~= generation then
    out[#out + 1] = 0
  else
    out[#out + 1] = 1
    local inflight = redis.call('EXISTS', KEYS[key + 1]) == 1
    local unknown = redis.call('EXISTS', KEYS[key + 3]) == 1
    for i = 0, n - 1 do
      local id = ARGV[firstId + i]
      local row = prefix .. id
      local offset = firstValue + i * k - 1
      local values = redis.call('HMGET', row, unpack(names))
      -- The pending and in-flight fields of the counters the row lacks.
      local missing, fields = {}, {}
      for j = 1, k do
        if not values[j] then
          missing[#missing + 1] = j
          fields[#fields + 1] = id .. ' ' .. ARGV[counters + j]
        end
      end
      local seedable = true
      if #missing > 0 and inflight then
        for _, delta in ipairs(redis.call('HMGET', KEYS[key + 1], unpack(fields))) do
          if delta then seedable = false end
        end
      end
      if not seedable then
        for j = 1, k do out[#out + 1] = false end
      else
        if #missing > 0 then
          local pending = redis.call('HMGET', KEYS[key + 2], unpack(fields))
          local given = unknown and redis.call('HMGET', KEYS[key + 3], unpack(fields)) or {}
          for m, j in ipairs(missing) do
            local base, p, g = ARGV[offset + j], pending[m] or '0', given[m] or '0'
            local sum = exact_sum(p, tonumber(base))
            sum = sum and exact_sum(g, sum)
            -- exact_sum checks its first operand and the sum; the database value is checked here.
            if sum and math.abs(tonumber(base)) < 9007199254740992 then
              redis.call('HSET', row, names[j], sum)
              values[j] = sum
            else
              redis.call('HSET', row, names[j], base)
              redis.call('HINCRBY', row, names[j], p)
              redis.call('HINCRBY', row, names[j], g)
              values[j] = redis.call('HGET', row, names[j])
            end
          end
          redis.call('EXPIRE', row, ttl)
        end
        for j = 1, k do out[#out + 1] = values[j] end
      end
    end
  end
end
return out
`;
