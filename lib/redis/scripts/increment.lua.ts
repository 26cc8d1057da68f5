/** The increment script: see the comment at its top. */
export const INCREMENT_LUA = String.raw`
--[[
Applies the counter changes of one or more rows, each applied or refused on its own and in order,
exactly as if each had been its own call. The changes asked for in one turn of the event loop travel
together (IncrementBatcher), so a call's fixed cost is shared.

KEYS, four per row: the row's hash, its shard's pending hash, dirty set and generation (one slot); a
row with a keyed change has a fifth, its shard's idempotency record (a sorted set).
ARGV[1] row TTL (seconds); then per row, in the order of KEYS: its encoded id, the number n of its
changes, then n times (counter, delta, min, max); min and max are '' for the safe-integer limits; a windowed counter
comes as '<name>@<letters>' (buckets.lua.ts). A row
with a keyed change gives -n instead of n, then the keys' lifetime (seconds), then n times (counter,
delta, min, max, idempotency key), the key '' for a change without one.
Returns two values per change, in order: {1, new value} when applied; {0, generation} when the row has
no live value of the counter (nothing written: the caller loads the row and calls again); {2, current
value} when the new value would leave [min, max] (nothing written); {3, current value} when the change's
key is in the record for the row (nothing written). A call of one change, applied, returns the new value
alone (a client reads an integer faster than an array).

Where a change goes: the row's 'v:<counter>' holds the live value; the shard's pending hash holds, per
'<encoded id> <counter>', the delta no flush has claimed yet, and a windowed counter's bucket fields
(buckets.lua.ts). Invariant: every row with a pending change is in the dirty set. The row is a cache
that may expire; its pending changes do not.

The idempotency record holds '<encoded id> <key>' per applied keyed change, scored by when it expires
(ms, Redis's clock). Invariant: a keyed change is applied only if its member is absent or expired, and
is recorded in the same call; a change answered 0 or 2 records nothing. The record has no TTL, so a
Redis that evicts keys with one (volatile-*) never forgets a key: for each keyed change answered 1 or 3
the call removes up to IDEMPOTENCY_PRUNE_PER_CHANGE expired members of its record, the oldest, without
a scan of the keyspace.
]]

--@include row-change
--@include limits
local function outside(value, min, max)
  return value < (min == '' and -MAX_SAFE or tonumber(min)) or value > (max == '' and MAX_SAFE or tonumber(max))
end

-- Whether a member of a record is there and not expired.
local function remembered(record, member)
  local expiry = redis.call('ZSCORE', record, member)
  return expiry ~= false and tonumber(expiry) > now_ms()
end

-- Records a keyed change's member, expiring 'lifetime' ms from now, unless the record holds it
-- unexpired: false then (the change was applied already). One ZADD in the common case, a new key.
local function remember(record, member, lifetime)
  local expiry = now_ms() + lifetime
  if redis.call('ZADD', record, 'NX', expiry, member) == 1 then return true end
  if remembered(record, member) then return false end
  redis.call('ZADD', record, expiry, member)
  return true
end

-- Removes up to 'limit' expired members of a record: the lowest scores, so no member is read into Lua.
-- PERSIST: an earlier version gave records a TTL, which would forget the keys added since.
local function prune(record, limit)
  local expired = redis.call('ZCOUNT', record, '-inf', now_ms())
  if expired > 0 then redis.call('ZREMRANGEBYRANK', record, 0, math.min(expired, limit) - 1) end
  redis.call('PERSIST', record)
end

-- The one change of a row: most rows of a call have one, and need no tables. A keyed one (record and
-- member given) applies only if its member is not remembered.
local function change_one(k, id, counter, text, min, max, record, member, lifetime)
  local name, letters = split_windows(counter)
  local field = 'v:' .. name
  local value = redis.call('HGET', KEYS[k], field)
  if not value then return 0, redis.call('GET', KEYS[k + 3]) or '0' end
  local current, delta = tonumber(value), tonumber(text)
  if outside(current + delta, min, max) then
    if record and remembered(record, member) then return 3, exact(current) end
    return 2, exact(current)
  end
  if record and not remember(record, member, lifetime) then return 3, exact(current) end
  local made = delta ~= 0 and add(k, id, field, name, delta, text, letters) or 0
  if made > 0 then mark_dirty(k, id, made) end
  return 1, exact(current + delta)
end

-- One change in the call, the common case at low load: no loop, no table.
if #KEYS == 4 and ARGV[3] == '1' then
  local kind, value = change_one(1, ARGV[2], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
  if kind == 1 then return value end
  return { kind, value }
end
if #KEYS == 5 and ARGV[3] == '-1' then
  local record = KEYS[5]
  local kind, value =
    change_one(1, ARGV[2], ARGV[5], ARGV[6], ARGV[7], ARGV[8], record, ARGV[2] .. ' ' .. ARGV[9], ARGV[4] * 1000)
  if kind ~= 0 then prune(record, IDEMPOTENCY_PRUNE_PER_CHANGE) end
  if kind == 1 then return value end
  return { kind, value }
end

local out, at = {}, 2
local function answer(kind, value)
  out[#out + 1] = kind
  out[#out + 1] = value
end

-- Per record, in the order first met: the keyed changes answered 1 or 3, each of which prunes.
local records, keyedOf = {}, {}
local function count_keyed(record, kind)
  if kind == 0 or kind == 2 then return end
  if not keyedOf[record] then
    records[#records + 1] = record
    keyedOf[record] = 0
  end
  keyedOf[record] = keyedOf[record] + 1
end

local k = 1
while k <= #KEYS do
  local id, n = ARGV[at], tonumber(ARGV[at + 1])
  at = at + 2
  -- A row with keyed changes declares its shard's record as a fifth key and gives a key per change.
  local record, lifetime, width = nil, nil, 4
  if n < 0 then
    n, record, lifetime, width = -n, KEYS[k + 4], tonumber(ARGV[at]) * 1000, 5
    at = at + 1
  end
  if n == 1 then
    local key = record and ARGV[at + 4] or ''
    local keyed = key ~= '' and record or nil
    local member = id .. ' ' .. key
    local kind, value = change_one(k, id, ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], keyed, member, lifetime)
    answer(kind, value)
    if keyed then count_keyed(keyed, kind) end
    at = at + width
  else
    -- Several changes of a row: each counter's are added up and written once (a hot row's likes).
    -- Per counter: {live value, sum of the applied deltas, field, name, letters}, or false when it has no
    -- live value.
    local state, counters = {}, {}
    for _ = 1, n do
      local counter, delta, min, max = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2], ARGV[at + 3]
      local key = record and ARGV[at + 4] or ''
      at = at + width
      if state[counter] == nil then
        local name, letters = split_windows(counter)
        local field = 'v:' .. name
        local value = redis.call('HGET', KEYS[k], field)
        state[counter] = value and { tonumber(value), 0, field, name, letters } or false
        counters[#counters + 1] = counter
      end
      local counted = state[counter]
      local member = key ~= '' and id .. ' ' .. key or nil
      local kind
      if not counted then
        kind = 0
        answer(0, redis.call('GET', KEYS[k + 3]) or '0')
      elseif outside(counted[1] + delta, min, max) then
        kind = member and remembered(record, member) and 3 or 2
        answer(kind, exact(counted[1]))
      elseif member and not remember(record, member, lifetime) then
        kind = 3
        answer(3, exact(counted[1]))
      else
        kind = 1
        counted[1] = counted[1] + delta
        counted[2] = counted[2] + delta
        answer(1, exact(counted[1]))
      end
      if member then count_keyed(record, kind) end
    end
    local made = 0
    for _, counter in ipairs(counters) do
      local counted = state[counter]
      local sum = counted and counted[2]
      if sum and sum ~= 0 then made = made + add(k, id, counted[3], counted[4], sum, exact(sum), counted[5]) end
    end
    if made > 0 then mark_dirty(k, id, made) end
  end
  k = k + width
end
for _, record in ipairs(records) do prune(record, IDEMPOTENCY_PRUNE_PER_CHANGE * keyedOf[record]) end
return out
`;
