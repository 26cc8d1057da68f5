import { WIDE_PENDING_LUA } from './wide-pending.lua.js';

/**
 * Takes (or renews) a shard's lease and claims a batch: the shard's pending deltas become its batch hash,
 * which holds them until the database has them. Rows are not touched: their `v:` fields have counted the
 * deltas all along, and a row is a cache that may expire at any time (see increment.script.ts).
 *
 * KEYS[1] dirty set (sorted by when each row became dirty), KEYS[2] batch hash, KEYS[3] lease,
 * KEYS[4] generation, KEYS[5] pending hash, KEYS[6] the hash of changes of counters unknown to the
 * flushers that claimed them (all one slot).
 * ARGV[1] lease token, ARGV[2] lease ms, ARGV[3] new batch id, ARGV[4] max rows, ARGV[5] now (ms),
 * ARGV[6..] the counters to claim (the entity's).
 * Every reply starts with {kind, lost, generation}: lost is 1 when the shard's generation key was
 * missing (it never expires, so Redis lost this shard's data: restart without persistence, failover to a
 * replica that was behind, eviction); the key is then recreated at 0. Then:
 * {'busy', lost, gen} when another flusher holds the lease; {'empty', lost, gen} when nothing is dirty
 * (no lease taken); {'pending', lost, gen, batchId, more, deltas} when a batch left behind must be
 * finished first; {'claimed', lost, gen, batchId, more, deltas} for a new batch ({'claimed', lost, gen,
 * '', more} if nothing was pending: no batch is kept). more is the number of rows still dirty; deltas is
 * the batch hash's `DUMP` (read by batch-rows.ts): a change's field is "<encoded id> <counter>" (neither
 * holds a space) and its value a decimal integer, 0 when the change netted to zero; the batch's own
 * fields start with '#' (in a new batch's dump at most `#wide`, which came with the pending hash: see
 * wide-pending.lua.ts), or nil where Redis refused `DUMP` (an ACL). The caller reads the reply as Buffers.
 *
 * A shard with at most `max rows` dirty rows is claimed whole: its pending hash is renamed to the batch
 * hash (and a new one made with `#wide`), and its dirty set deleted, whatever the number of rows: no
 * command per row or per field (the flush bench's Redis script time fell from 5.3 to 1.8 µs per row of
 * three counters when claims stopped moving each row's fields). A larger one gives its oldest rows, so
 * that no row waits behind newer ones: their fields move in one HMGET, one HDEL and one HSET.
 * Invariant: every unflushed delta is in exactly one place: the pending hash (its row in the dirty set),
 * the batch hash, or the hash of changes of counters unknown to the flusher that claimed them.
 */
export const CLAIM_LUA =
  WIDE_PENDING_LUA +
  `
local lost = 0
if redis.call('EXISTS', KEYS[4]) == 0 then
  redis.call('SET', KEYS[4], '0')
  lost = 1
end
local gen = redis.call('GET', KEYS[4])
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[1] then
  return {'busy', lost, gen}
end

-- The batch hash as its DUMP, one string made in C: the caller skips the batch's own fields ('#') and
-- deltas that netted to zero. A string of lines made here from HGETALL cost Redis 540 µs for a batch of
-- 520 rows of three counters, the DUMP 144 µs (measured alone): every field became a Lua string.
-- false (nil to the caller, which then reads the batch with HGETALL) where DUMP is refused: an ACL that
-- does not allow it.
local function batch_dump()
  local payload = redis.pcall('DUMP', KEYS[2])
  if type(payload) == 'table' and payload.err then return false end
  return payload
end

-- redis.call takes at most a few thousand arguments at once (Lua's stack).
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

local batchId = redis.call('HGET', KEYS[2], '#id')
if batchId then
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
  return {'pending', lost, gen, batchId, redis.call('ZCARD', KEYS[1]), batch_dump()}
end
local dirty = redis.call('ZCARD', KEYS[1])
if dirty == 0 then
  return {'empty', lost, gen}
end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
local since = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
local rows = dirty
if dirty <= tonumber(ARGV[4]) then
  if redis.call('EXISTS', KEYS[5]) == 1 then redis.call('RENAME', KEYS[5], KEYS[2]) end
  make_wide(KEYS[5])
  -- UNLINK: a set of thousands of rows is freed off Redis's main thread.
  redis.call('UNLINK', KEYS[1])
else
  local popped = redis.call('ZPOPMIN', KEYS[1], ARGV[4])
  local fields = {}
  for p = 1, #popped, 2 do
    for c = 6, #ARGV do fields[#fields + 1] = popped[p] .. ' ' .. ARGV[c] end
  end
  local values = in_chunks('HMGET', KEYS[5], fields)
  local moved = {}
  for f = 1, #fields do
    if values[f] then
      moved[#moved + 1] = fields[f]
      moved[#moved + 1] = values[f]
    end
  end
  in_chunks('HDEL', KEYS[5], fields)
  if #moved > 0 then in_chunks('HSET', KEYS[2], moved) end
  rows = #popped / 2
end
-- Changes an instance that did not know their counters gave back (give-back.script.ts): this one knows
-- them if they are among the counters it claims for.
if redis.call('EXISTS', KEYS[6]) == 1 then
  local known = {}
  for c = 6, #ARGV do known[ARGV[c]] = true end
  local flat = redis.call('HGETALL', KEYS[6])
  for i = 1, #flat, 2 do
    local field = flat[i]
    if known[string.sub(field, string.find(field, ' ', 1, true) + 1)] then
      redis.call('HINCRBY', KEYS[2], field, flat[i + 1])
      redis.call('HDEL', KEYS[6], field)
    end
  end
end
local more = redis.call('ZCARD', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 0 then
  -- Nothing was pending: no batch to write or to acknowledge.
  return {'claimed', lost, gen, '', more}
end
local deltas = batch_dump()
-- #since: when the oldest row of the batch became dirty; #rows: rows in the batch.
redis.call('HSET', KEYS[2], '#id', ARGV[3], '#at', ARGV[5], '#since', since, '#rows', rows)
return {'claimed', lost, gen, ARGV[3], more, deltas}
`;
