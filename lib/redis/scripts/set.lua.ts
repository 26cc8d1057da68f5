/** The set script: see the comment at its top. */
export const SET_LUA = String.raw`
--[[
Sets one counter of one row to a value: adds to it, as a change, the difference between the value and
the live value it finds, so that the flush writes that difference with the other changes of the shard,
exactly once. The live value already holds the changes pending and in flight, so once they are flushed
the database holds the value too, plus whatever changed after the set.

KEYS: the row's hash, its shard's pending hash, dirty set and generation (one slot).
ARGV: row TTL (seconds), the encoded id, the counter, the value, min and max, a new random version, and
optionally the live value and version the caller expects to replace (a recount's, read by
versioned-read.lua.ts: it must not undo a change made since it read, nor redo a correction).
Returns {1, the live value replaced} when set; {0, generation} when the row has no live value of the
counter (nothing written: the caller loads the row and calls again); {2, current value} when the value
is outside [min, max] or the difference is not a safe integer (nothing written); {3, current value}
when the live value or the version is not the one expected (nothing written).

Invariants, as in increment.lua.ts: every row with a pending change is in the dirty set. And a set that
changes the value replaces the counter's version ('s:<counter>' in the row's hash): changes alone never
do, since a change mirrors one of the source, but a set moves the value without the source, so a value
that comes back after one must not pass for the value a recount read before it.
]]

--@include row-change
local id, counter, target, min, max = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
local field, version_field, version = 'v:' .. counter, 's:' .. counter, ARGV[7]

local value = redis.call('HGET', KEYS[1], field)
if not value then return { 0, redis.call('GET', KEYS[4]) or '0' } end
local current = tonumber(value)
if ARGV[8] and (tonumber(ARGV[8]) ~= current or redis.call('HGET', KEYS[1], version_field) ~= ARGV[9]) then
  return { 3, exact(current) }
end
local delta = target - current
if target < tonumber(min) or target > tonumber(max) or math.abs(delta) > MAX_SAFE then
  return { 2, exact(current) }
end
if delta ~= 0 then
  local made = add(1, id, field, counter, delta, exact(delta))
  if made > 0 then mark_dirty(1, id, made) end
  redis.call('HSET', KEYS[1], version_field, version)
end
return { 1, exact(current) }
`;
