/** The versioned read script: see the comment at its top. */
export const VERSIONED_READ_LUA = String.raw`
--[[
Reads one counter of rows together with its version, for a recount's compare-and-set (set.lua.ts): the
set applies only while both are still the ones read. The version is a random token in the row's hash,
's:<counter>', replaced by every set that changes the value; a loaded row that has none gets the one
given here.

KEYS: the hashes of the rows (one slot).
ARGV[1] the counter, ARGV[2] a new random version, for the rows that have none.
Returns per row two strings: its live value and its version; '' and '' for a row that is not loaded.

Invariant: a version, once read, is never a row's version again after a set changed the value, even if
the row expires and is loaded anew meanwhile (it then has none until a read gives it a new one).
]]

local value_field, version_field, fresh = 'v:' .. ARGV[1], 's:' .. ARGV[1], ARGV[2]
local out = {}
for k = 1, #KEYS do
  local value = redis.call('HGET', KEYS[k], value_field)
  if value then
    redis.call('HSETNX', KEYS[k], version_field, fresh)
    out[#out + 1] = value
    out[#out + 1] = redis.call('HGET', KEYS[k], version_field)
  else
    out[#out + 1] = ''
    out[#out + 1] = ''
  end
end
return out
`;
