/**
 * Stores database values as the live values of rows that have none yet, and returns their live values.
 *
 * KEYS[1] the shard's generation, KEYS[2] the shard's batch hash, KEYS[3..n+2] row hashes of that shard
 * (all one slot).
 * ARGV[1] the generation read before the database was queried, ARGV[2] TTL of clean rows (seconds),
 * ARGV[3] the shard's row key prefix, ARGV[4] k, ARGV[5..4+k] counter names, then k database values per
 * row, in KEYS order.
 * Returns nil when the generation moved (a batch was acknowledged while the database was read, so the
 * values may already include or miss it: read again); otherwise {v(1,1) … v(n,k)} with live values,
 * nil for a row that lacks a counter while the shard's batch in flight holds it (its deltas may or may not
 * be in the database yet: retry after the ack).
 *
 * Invariant: a live value is only ever set from a database value read while no acknowledgement happened
 * in the shard and no delta of the row was in flight, and never replaces an existing one, so no flushed
 * batch is counted twice or missed.
 */
export const SEED_LUA = `
if (redis.call('GET', KEYS[1]) or '0') ~= ARGV[1] then
  return false
end
local ttl, prefix, k = ARGV[2], ARGV[3], tonumber(ARGV[4])
local names = {}
for j = 1, k do names[j] = 'v:' .. ARGV[4 + j] end
-- The batch's rows, one line each, starting with the encoded id and a space (see claim.script.ts).
local inflight = redis.call('HGET', KEYS[2], '#entries')
if inflight then inflight = '\\n' .. inflight end
local out = {}
for i = 3, #KEYS do
  local row = KEYS[i]
  local offset = 4 + k + (i - 3) * k
  local values = redis.call('HMGET', row, unpack(names))
  local complete = true
  for j = 1, k do
    if not values[j] then complete = false end
  end
  local seedable = complete or not inflight
    or not string.find(inflight, '\\n' .. string.sub(row, #prefix + 1) .. ' ', 1, true)
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
return out
`;
