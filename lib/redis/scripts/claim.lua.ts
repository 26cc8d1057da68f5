/** The claim script: see the comment at its top. */
export const CLAIM_LUA = String.raw`#!lua flags=allow-oom
--[[
Takes (or renews) a shard's lease and claims a batch: the shard's pending changes become its batch
hash, which holds them until the database has them. No row is touched (their 'v:' fields have counted
the changes all along), so every key the script uses is one of KEYS; the field names it makes
('<encoded id> <counter>') come from the dirty set's members.

KEYS: the shard's dirty set, batch hash, lease, generation, pending hash, and hash of changes of
counters unknown to the flushers that claimed them (give-back.lua.ts); one slot.
ARGV[1] lease token, ARGV[2] lease ms, ARGV[3] new batch id, ARGV[4] most rows, ARGV[5] now (ms),
ARGV[6..] the counters to claim (the entity's), a windowed one as '<name>@<letters>' (buckets.lua.ts).
Every reply starts with {kind, lost, generation}: lost is 1 when the generation key was missing (it
never expires, so Redis lost the shard's data: a restart without persistence, a failover to a replica
that was behind, eviction); the key is then made again at 0. Then:
  {'busy', lost, gen}: another flusher holds the lease;
  {'empty', lost, gen}: nothing is dirty (no lease taken);
  {'pending', lost, gen, batch id, more, dump}: a batch left behind, to finish first;
  {'claimed', lost, gen, batch id, more, dump}: a new batch ('' as its id, and no dump, when every
  change netted to zero: no batch is kept).
more is the number of rows still dirty; dump is the batch hash's DUMP (read by claimed-batch.reader.ts),
or false where Redis refuses DUMP (an ACL): the caller then reads the batch with HGETALL.

A shard with at most 'most rows' dirty rows is claimed whole: its pending hash is renamed to the batch
hash and its dirty set deleted, whatever the number of rows. A larger one gives its oldest rows, so no
row waits behind newer ones: each with its changes and, for a windowed counter, its bucket fields from
its dirty-set score on. The new pending hash is kept as a hash table (wide-hash.lua.ts).
Invariant: every unflushed change is in exactly one place: the pending hash (its row in the dirty set),
the batch hash, or the hash of unknown counters' changes (until dropped as those of a removed counter).
Runs on a Redis full under noeviction (allow-oom): the flush is what drains it, and this script adds
at most a lease or a few fields while the flush frees whole batches.
]]

--@include wide-hash
--@include limits
--@include buckets

local dirty, batch, lease, generation, pending, unknown = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token, leaseMs, batchId, most, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
-- The counters claimed for, and per name the letters of its granularities ('' for a plain counter).
local names, letters_of = {}, {}
for c = 6, #ARGV do
  local name, letters = split_windows(ARGV[c])
  names[#names + 1] = name
  letters_of[name] = letters or ''
end

local lost = 0
if redis.call('EXISTS', generation) == 0 then
  redis.call('SET', generation, '0')
  lost = 1
end
local gen = redis.call('GET', generation)
local holder = redis.call('GET', lease)
if holder and holder ~= token then return { 'busy', lost, gen } end

-- The batch as one string made by Redis, instead of a Lua string per field (see docs/PERFORMANCE.md,
-- "Claims read from DUMP"); false where an ACL refuses DUMP.
local function dump()
  local payload = redis.pcall('DUMP', batch)
  if type(payload) == 'table' and payload.err then return false end
  return payload
end

-- redis.call takes a few thousand arguments at most (Lua's stack).
local function in_chunks(command, key, items)
  local replies = {}
  for first = 1, #items, 4000 do
    local reply = redis.call(command, key, unpack(items, first, math.min(first + 3999, #items)))
    if type(reply) == 'table' then
      for _, item in ipairs(reply) do replies[#replies + 1] = item end
    end
  end
  return replies
end

local leftBehind = redis.call('HGET', batch, '#id')
if leftBehind then
  redis.call('SET', lease, token, 'PX', leaseMs)
  return { 'pending', lost, gen, leftBehind, redis.call('ZCARD', dirty), dump() }
end
local rows = redis.call('ZCARD', dirty)
if rows == 0 then return { 'empty', lost, gen } end
redis.call('SET', lease, token, 'PX', leaseMs)
local since = redis.call('ZRANGE', dirty, 0, 0, 'WITHSCORES')[2]
if rows <= most then
  if redis.call('EXISTS', pending) == 1 then redis.call('RENAME', pending, batch) end
  keep_as_hash_table(pending)
  -- UNLINK frees a set of thousands of rows off Redis's main thread.
  redis.call('UNLINK', dirty)
else
  local popped = redis.call('ZPOPMIN', dirty, most)
  local fields = {}
  for p = 1, #popped, 2 do
    for _, name in ipairs(names) do
      local field = popped[p] .. ' ' .. name
      fields[#fields + 1] = field
      if letters_of[name] ~= '' then bucket_fields(fields, field, letters_of[name], tonumber(popped[p + 1])) end
    end
  end
  local values = in_chunks('HMGET', pending, fields)
  local moved = {}
  for f = 1, #fields do
    if values[f] then
      moved[#moved + 1] = fields[f]
      moved[#moved + 1] = values[f]
    end
  end
  in_chunks('HDEL', pending, fields)
  if #moved > 0 then in_chunks('HSET', batch, moved) end
  rows = #popped / 2
end
-- Changes given back by an instance that did not know their counters: this one knows them if they are
-- among the counters it claims for (a bucket's, if it keeps that granularity). Those of a counter it
-- does not know either are dropped once nothing was given back for UNKNOWN_CHANGES_KEPT_MS ms ('#at',
-- see give-back.lua.ts): a counter removed from the entity, which no instance will claim.
local function known(field)
  local name, bucket = split_windows(string.sub(field, string.find(field, ' ', 1, true) + 1))
  local letters = letters_of[name]
  if letters == nil then return false end
  if bucket == nil then return true end
  return string.find(letters, string.sub(bucket, 1, 1), 1, true) ~= nil
end
if redis.call('EXISTS', unknown) == 1 then
  local flat = redis.call('HGETALL', unknown)
  local givenAt, left = nil, 0
  for i = 1, #flat, 2 do
    if flat[i] == '#at' then givenAt = tonumber(flat[i + 1]) end
  end
  local stale = givenAt ~= nil and givenAt + UNKNOWN_CHANGES_KEPT_MS <= now_ms()
  for i = 1, #flat, 2 do
    local field = flat[i]
    if field ~= '#at' then
      if known(field) then
        redis.call('HINCRBY', batch, field, flat[i + 1])
        redis.call('HDEL', unknown, field)
      elseif stale then
        redis.call('HDEL', unknown, field)
      else
        left = left + 1
      end
    end
  end
  if left == 0 then redis.call('DEL', unknown) end
end
local more = redis.call('ZCARD', dirty)
if redis.call('EXISTS', batch) == 0 then return { 'claimed', lost, gen, '', more } end
local payload = dump()
-- #since: when the oldest row of the batch became dirty; #rows: rows in the batch (status.lua.ts).
redis.call('HSET', batch, '#id', batchId, '#at', now, '#since', since, '#rows', rows)
return { 'claimed', lost, gen, batchId, more, payload }
`;
