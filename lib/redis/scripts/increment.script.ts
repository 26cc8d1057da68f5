import { EXACT_NUMBER_LUA } from './exact-number.lua.js';

/**
 * What both increment scripts do alike: check a new value against a counter's bounds ('' stands for the
 * safe-integer limit), write a change, and record a row's first pending change (see INCREMENT_MANY_LUA's
 * invariant).
 */
const CHANGE_HELPERS_LUA = EXACT_NUMBER_LUA + `
local function outside_bounds(value, min, max)
  return value < (min == '' and -9007199254740991 or tonumber(min))
    or value > (max == '' and 9007199254740991 or tonumber(max))
end

local function mark_pending(row, dirty, id)
  if not redis.call('ZSCORE', dirty, id) then
    local now = redis.call('TIME')
    redis.call('ZADD', dirty, now[1] * 1000 + math.floor(now[2] / 1000), id)
  end
  redis.call('PERSIST', row)
end

-- The new live value and the pending delta plus this change, in one HSET while the sum is exact.
local function write_change(row, fields, value, pending, delta)
  local sum = exact_sum(pending, delta)
  if sum then
    redis.call('HSET', row, fields[1], exact(value), fields[2], sum)
  else
    redis.call('HSET', row, fields[1], exact(value))
    redis.call('HINCRBY', row, fields[2], exact(delta))
  end
end
`;

/**
 * Changes one counter of one row: the common case at low load, when a turn of the event loop asks for
 * a single change. It is INCREMENT_MANY_LUA for one change without the bookkeeping that lets changes
 * share reads (about 5 of its 14 µs per call, measured on this project's machine).
 *
 * KEYS[1] row hash, KEYS[2] the shard's dirty set, KEYS[3] the shard's generation (all one slot).
 * ARGV[1] encoded row id, ARGV[2] counter, ARGV[3] delta, ARGV[4] min, ARGV[5] max (see below for '').
 * Returns the two values of one change, as INCREMENT_MANY_LUA does.
 */
export const INCREMENT_ONE_LUA = CHANGE_HELPERS_LUA + `
local fields = {'v:' .. ARGV[2], 'p:' .. ARGV[2]}
local values = redis.call('HMGET', KEYS[1], fields[1], fields[2])
if not values[1] then
  return {0, redis.call('GET', KEYS[3]) or '0'}
end
local current = tonumber(values[1])
local delta = tonumber(ARGV[3])
local nextValue = current + delta
if outside_bounds(nextValue, ARGV[4], ARGV[5]) then
  return {2, exact(current)}
end
if delta ~= 0 then
  write_change(KEYS[1], fields, nextValue, values[2], delta)
  if not values[2] then mark_pending(KEYS[1], KEYS[2], ARGV[1]) end
end
return {1, exact(nextValue)}
`;

/**
 * Changes counters of one or more rows, in one call: the increments requested in one turn of the
 * event loop travel together (see tick-queue.ts and CounterStore.sendIncrements), so a script call's
 * fixed cost is paid once for all of them. Each change is applied, or refused, on its own and in order,
 * exactly as if each had been its own call.
 *
 * KEYS, per row: its hash, its shard's dirty set (sorted by when each row became dirty), its shard's
 * generation (on a cluster the caller sends only rows of one slot).
 * ARGV, per row (same order): encoded id, the number n of its changes, then n × (counter, delta, min, max);
 * min and max are '' for the safe-integer limits ±(2^53-1), the bounds of a counter that declares none
 * (fewer bytes to send and parse on every change).
 * Returns, per change (same order), two values: {1, newValue} when applied; {0, generation} when the row
 * has no base for that counter yet (nothing written: the caller seeds it and calls again); {2,
 * currentValue} when the new value would leave [min, max] (nothing written). Values are decimal strings
 * (see live-value.lua.ts).
 *
 * Row fields: `v:<counter>` the live value, `p:<counter>` the delta not yet claimed by a flush (what a
 * claimed batch holds in flight lives in the shard's batch hash, see claim.script.ts).
 * Invariant: every row with a `p:` field is in the dirty set and has no TTL,
 * so a pending delta can neither expire nor be missed by the next claim. The invariant is also what
 * keeps the common case short: a counter that already has a `p:` field is in the dirty set and has no
 * TTL, so only its first change pays for the dirty-set check and the PERSIST (every redis.call costs
 * about as much as the command it runs). For the same reason a row's changes of one counter are added
 * up and written with one HSET: on a hot row that is one write per call instead of one per like.
 */
export const INCREMENT_MANY_LUA = CHANGE_HELPERS_LUA + `
local out, at, names = {}, 1, {}
for k = 1, #KEYS, 3 do
  local row = KEYS[k]
  local id, changes = ARGV[at], tonumber(ARGV[at + 1])
  at = at + 2
  -- Per counter of the row: {live value, its p: field, sum of applied deltas, field names}; false when
  -- unseeded.
  local state, touched, generation = {}, {}, nil
  for _ = 1, changes do
    local counter, delta, min, max = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2], ARGV[at + 3]
    at = at + 4
    local counted = state[counter]
    if counted == nil then
      local fields = names[counter]
      if not fields then
        fields = {'v:' .. counter, 'p:' .. counter}
        names[counter] = fields
      end
      local values = redis.call('HMGET', row, fields[1], fields[2])
      counted = values[1] and {tonumber(values[1]), values[2], 0, fields} or false
      state[counter] = counted
      touched[#touched + 1] = counter
    end
    if not counted then
      generation = generation or redis.call('GET', KEYS[k + 2]) or '0'
      out[#out + 1] = 0
      out[#out + 1] = generation
    else
      local nextValue = counted[1] + delta
      if outside_bounds(nextValue, min, max) then
        out[#out + 1] = 2
        out[#out + 1] = exact(counted[1])
      else
        counted[1] = nextValue
        counted[3] = counted[3] + delta
        out[#out + 1] = 1
        out[#out + 1] = exact(nextValue)
      end
    end
  end
  local marked = false
  for _, counter in ipairs(touched) do
    local counted = state[counter]
    if counted and counted[3] ~= 0 then
      write_change(row, counted[4], counted[1], counted[2], counted[3])
      if not counted[2] and not marked then
        mark_pending(row, KEYS[k + 1], id)
        marked = true
      end
    end
  end
end
return out
`;
