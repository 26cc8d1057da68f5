/**
 * The Lua both change scripts (increment.lua.ts, set.lua.ts) start with: how a change of a row reaches its
 * live value, its shard's pending hash and dirty set. Their KEYS give, per row from index k: the row's
 * hash, the shard's pending hash, dirty set and generation; ARGV[1] is the row TTL (seconds).
 */
export const ROW_CHANGE_LUA = String.raw`
local MAX_SAFE = 9007199254740991
local ttl = ARGV[1]

-- A value Redis returns exactly: the number below 10^14, else its digits (Lua's own conversion keeps 14).
local function exact(number)
  if number > -1e14 and number < 1e14 then return number end
  return string.format('%.0f', number)
end

-- Adds delta (given as text, as redis.call takes it) to the live value and to the pending change; true
-- when the pending change is new (the first since the shard's last claim, or one that netted to zero).
local function add(k, id, field, counter, delta, text)
  redis.call('HINCRBY', KEYS[k], field, text)
  return redis.call('HINCRBY', KEYS[k + 1], id .. ' ' .. counter, text) == delta
end

-- Redis's clock in ms, read once per call: a call runs at one instant for everyone else.
local clock
local function now_ms()
  if not clock then
    local time = redis.call('TIME')
    clock = time[1] * 1000 + math.floor(time[2] / 1000)
  end
  return clock
end

-- A row whose changes just made 'created' pending changes joins the dirty set (NX keeps when it first
-- became dirty) and stays cached for another TTL. A pending hash of no more fields than those was made by
-- them: it gets the '#wide' field, which makes Redis keep it as a hash table (see claim.lua.ts).
local function mark_dirty(k, id, created)
  if redis.call('HLEN', KEYS[k + 1]) <= created then
    redis.call('HSET', KEYS[k + 1], '#wide', string.rep('-', 65))
  end
  redis.call('ZADD', KEYS[k + 2], 'NX', now_ms(), id)
  redis.call('EXPIRE', KEYS[k], ttl)
end
`;
