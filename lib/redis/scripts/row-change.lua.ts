/**
 * Lua piece (`--@include row-change`, see lua.loader.ts) both change scripts (increment.lua.ts,
 * set.lua.ts) start with: how a change of a row reaches its live value, its shard's pending hash and
 * dirty set. Their KEYS give, per row from index k: the row's hash, the shard's pending hash, dirty set
 * and generation; ARGV[1] is the row TTL (seconds).
 */
export const ROW_CHANGE_LUA = String.raw`
--@include numbers
--@include wide-hash
--@include buckets
local ttl = ARGV[1]

-- Adds delta (given as text, as redis.call takes it) to the live value and to the pending change, and
-- to the current buckets of a windowed counter ('letters' its granularities, nil for none). When the
-- pending change is new (the first since the shard's last claim, or one that netted to zero), returns how
-- many fields of the pending hash the change may have made: itself and its buckets. Else 0.
local function add(k, id, field, counter, delta, text, letters)
  redis.call('HINCRBY', KEYS[k], field, text)
  local change = id .. ' ' .. counter
  if letters then add_to_buckets(KEYS[k + 1], change, letters, text) end
  if redis.call('HINCRBY', KEYS[k + 1], change, text) ~= delta then return 0 end
  return 1 + (letters and #letters or 0)
end

-- A row whose changes just made new pending changes, and up to 'made' fields of the pending hash with
-- them, joins the dirty set (NX keeps when it first became dirty) and stays cached for another TTL. A
-- pending hash of no more fields than those was made by them: it is kept as a hash table. (Counting the
-- bucket fields matters: a shard's few hundred fields of windowed counters stayed a listpack otherwise.)
local function mark_dirty(k, id, made)
  if redis.call('HLEN', KEYS[k + 1]) <= made then keep_as_hash_table(KEYS[k + 1]) end
  redis.call('ZADD', KEYS[k + 2], 'NX', now_ms(), id)
  redis.call('EXPIRE', KEYS[k], ttl)
end
`;
