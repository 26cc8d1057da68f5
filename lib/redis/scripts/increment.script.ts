import { EXACT_NUMBER_LUA } from './exact-number.lua.js';
import { WIDE_PENDING_LUA } from './wide-pending.lua.js';

/**
 * What both increment scripts do alike: check a new value against a counter's bounds ('' stands for the
 * safe-integer limit), and write a change: the row's live value, and the delta in the shard's pending
 * hash (see INCREMENT_MANY_LUA).
 */
const CHANGE_HELPERS_LUA =
  EXACT_NUMBER_LUA +
  WIDE_PENDING_LUA +
  `
local function outside_bounds(value, min, max)
  return value < (min == '' and -9007199254740991 or tonumber(min))
    or value > (max == '' and 9007199254740991 or tonumber(max))
end

-- Adds \`delta\` (a number) to the row's live value and to the pending delta; \`text\` is the same delta as
-- redis.call takes it. The one-change script passes its argument as it came: Redis 7.0 turns a number
-- argument of redis.call into text with snprintf, which cost more than the HINCRBY it fed (see
-- INCREMENT_ONE_LUA). The value checked against the bounds and returned is the caller's own sum: the
-- script runs alone, so the row's field holds exactly that once HINCRBY added the delta.
-- Returns true when this is the counter's first change since its shard's last claim: the pending field
-- was just made (or had netted to zero), and the caller marks the row dirty.
local function write_change(row, pending, id, field, counter, delta, text)
  redis.call('HINCRBY', row, field, text)
  return redis.call('HINCRBY', pending, id .. ' ' .. counter, text) == delta
end

-- The shard's key of \`suffix\` (':pending', ':dirty', ':gen'), from the row's key \`<shard tag>:r:<id>\` (see
-- keys.ts): the same slot as the row, so a cluster serves it where it serves the row.
local function shard_key(row, id, suffix)
  return string.sub(row, 1, #row - #id - 3) .. suffix
end

-- A row's first change since the last claim: it joins the dirty set (NX keeps the time it first became
-- dirty) and stays cached for another TTL. A pending hash holding no more than the \`created\` fields the
-- row's changes just made was made by them: it becomes a hash table (see wide-pending.lua.ts). A field
-- that had netted to zero counts as made: at worst a hash that was already there (a listpack left by an
-- older release) becomes a hash table too.
local function mark_dirty(row, dirty, pending, id, ttl, created)
  if redis.call('HLEN', pending) <= created then make_wide(pending) end
  local now = redis.call('TIME')
  redis.call('ZADD', dirty, 'NX', now[1] * 1000 + math.floor(now[2] / 1000), id)
  redis.call('EXPIRE', row, ttl)
end

-- One change of one counter of a row, applied or refused on its own; \`text\` is the delta as it came
-- (see write_change), \`min\` and \`max\` its bounds ('' for the safe-integer limits). Returns what a change
-- gives (see INCREMENT_MANY_LUA): 1 and the new value, 0 and the shard's generation, or 2 and the value.
local function change_one(row, id, counter, text, min, max, ttl)
  local field = 'v:' .. counter
  local value = redis.call('HGET', row, field)
  if not value then
    return 0, redis.call('GET', shard_key(row, id, ':gen')) or '0'
  end
  local current = tonumber(value)
  local delta = tonumber(text)
  local nextValue = current + delta
  if outside_bounds(nextValue, min, max) then return 2, exact(current) end
  if delta ~= 0 then
    local pending = shard_key(row, id, ':pending')
    if write_change(row, pending, id, field, counter, delta, text) then
      mark_dirty(row, shard_key(row, id, ':dirty'), pending, id, ttl, 1)
    end
  end
  return 1, exact(nextValue)
end
`;

/**
 * Changes one counter of one row: the common case at low load, when a turn of the event loop asks for
 * a single change. It is change_one, which INCREMENT_MANY_LUA also runs for a row with a lone change.
 *
 * KEYS[1] row hash. The shard's other keys (pending hash, dirty set, generation) are built here from it
 * (they share its hash tag, so its slot): this script with one declared key and four arguments cost
 * Redis 7.9-8.1 µs per call, the one before it with four keys and six 8.5 µs, and made 2-3% more
 * increments per second at concurrency 1 (scratch, one client, rows spread over 10,000, two runs in
 * turns). Written out without the shared helpers it took 7.3-7.5 µs, within noise end to end. Adding
 * the delta argument as it came with HINCRBY, rather than HSET of the new value and HINCRBY of the delta
 * as Lua numbers (each turned into text by snprintf), took it from 13.6 to 12.2 µs (means of 8 runs in
 * turns on a slower hour of the same machine, where the bare two-command floor script took 10.9).
 * ARGV[1] encoded row id, ARGV[2] counter, ARGV[3] delta, ARGV[4] row TTL (seconds), then, for a
 * counter that declares bounds, ARGV[5] min and ARGV[6] max ('' for a safe-integer limit); absent for
 * one that declares none, which is held to the safe-integer limits ±(2^53-1).
 * Returns the new value alone when the change is applied (an integer, or its digits from 10^14 on: see
 * exact-number.lua.ts); otherwise the two values INCREMENT_MANY_LUA gives a change, {0, generation} or
 * {2, currentValue}. ioredis decodes a bare integer faster than an array: a client at concurrency 1
 * made 12,962 / 12,764 / 12,894 calls per second of a script returning an integer, 12,501 / 12,354 /
 * 11,658 of one returning `{1, value}` (scratch, one ioredis client, scripts that only return, three
 * runs of eight 0.4 s turns each), about 1 µs of CPU per call. In the increment bench that is within
 * its noise at concurrency 1: 0.76× and 0.75× of INCR against 0.76× and 0.73× before (runs in turns).
 */
export const INCREMENT_ONE_LUA =
  CHANGE_HELPERS_LUA +
  `
local kind, value = change_one(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[5] or '', ARGV[6] or '', ARGV[4])
if kind == 1 then return value end
return {kind, value}
`;

/**
 * Changes counters of one or more rows, in one call: the increments requested in one turn of the
 * event loop travel together (see tick-queue.ts and IncrementSender), so a script call's
 * fixed cost is paid once for all of them. Each change is applied, or refused, on its own and in order,
 * exactly as if each had been its own call.
 *
 * KEYS, per row: its hash (on a cluster the caller sends only rows of one slot). Its shard's dirty set
 * (sorted by when each row became dirty), generation and pending hash are built from it, as in
 * INCREMENT_ONE_LUA.
 * ARGV[1] row TTL (seconds); then per row (same order): encoded id, the number n of its changes, then
 * n × (counter, delta, min, max); min and max are '' for the safe-integer limits ±(2^53-1), the bounds
 * of a counter that declares none (fewer bytes to send and parse on every change).
 * Returns, per change (same order), two values: {1, newValue} when applied; {0, generation} when the row
 * has no live value for that counter (nothing written: the caller seeds it and calls again); {2,
 * currentValue} when the new value would leave [min, max] (nothing written). Values are decimal strings
 * (see exact-number.lua.ts).
 *
 * Where a change goes: the row's `v:<counter>` field holds the live value; the shard's pending hash
 * holds, per "<encoded id> <counter>", the delta no flush has claimed yet. A claim takes the pending hash
 * whole (claim.script.ts), so it touches no row, and a row is only ever a cache that may expire: a seed
 * adds the pending delta to the database value (seed.script.ts).
 * Invariant: every row with a pending field is in the dirty set (except, after a claim of part of a
 * shard, a field of a counter the claiming flusher did not know: the next claim of the whole shard takes
 * it). A row's changes of one counter are
 * added up and written once: on a hot row that is one write per call instead of one per like.
 *
 * A row with one change, as most are when a call's changes are spread over many rows, goes through
 * change_one, without the tables that let a row's several changes share its reads: Redis's time for a
 * call of 20 changes over 20 rows went from 106-186 to 82-125 µs (scratch, eight rounds of 3,000 calls
 * of each in turns, medians 138 and 103 µs), and the increment bench's scenario at concurrency 200 from
 * 0.77-1.01x to 0.94-1.25x of INCR (scratch copy, seven processes of each in turns; 2026-11-25, Intel host).
 */
export const INCREMENT_MANY_LUA =
  CHANGE_HELPERS_LUA +
  `
local ttl, out, at, names = ARGV[1], {}, 2, {}
for k = 1, #KEYS do
  local row = KEYS[k]
  local id, changes = ARGV[at], tonumber(ARGV[at + 1])
  at = at + 2
  if changes == 1 then
    local kind, value = change_one(row, id, ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ttl)
    out[#out + 1] = kind
    out[#out + 1] = value
    at = at + 4
  else
    -- Per counter of the row: {live value, sum of applied deltas, field name}; false when unseeded.
    local state, touched, generation = {}, {}, nil
    for _ = 1, changes do
      local counter, delta, min, max = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2], ARGV[at + 3]
      at = at + 4
      local counted = state[counter]
      if counted == nil then
        local field = names[counter]
        if not field then
          field = 'v:' .. counter
          names[counter] = field
        end
        local value = redis.call('HGET', row, field)
        counted = value and {tonumber(value), 0, field} or false
        state[counter] = counted
        touched[#touched + 1] = counter
      end
      if not counted then
        generation = generation or redis.call('GET', shard_key(row, id, ':gen')) or '0'
        out[#out + 1] = 0
        out[#out + 1] = generation
      else
        local nextValue = counted[1] + delta
        if outside_bounds(nextValue, min, max) then
          out[#out + 1] = 2
          out[#out + 1] = exact(counted[1])
        else
          counted[1] = nextValue
          counted[2] = counted[2] + delta
          out[#out + 1] = 1
          out[#out + 1] = exact(nextValue)
        end
      end
    end
    local created, pending = 0, nil
    for _, counter in ipairs(touched) do
      local counted = state[counter]
      if counted and counted[2] ~= 0 then
        pending = pending or shard_key(row, id, ':pending')
        local delta = counted[2]
        if write_change(row, pending, id, counted[3], counter, delta, exact(delta)) then created = created + 1 end
      end
    end
    if created > 0 then mark_dirty(row, shard_key(row, id, ':dirty'), pending, id, ttl, created) end
  end
end
return out
`;
