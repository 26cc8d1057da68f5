/** The bucket scan script: see the comment at its top. */
export const BUCKET_SCAN_LUA = String.raw`
--[[
Reads one page of the changes that wait in a shard for the buckets of one counter and granularity whose
start is in a range, whatever their rows, for a live top (CounterTop): the pending hash, then the hash
of changes given back (give-back.lua.ts), then the batch in flight, each walked by HSCAN from where the
page before stopped. A page walks a hash about 'count' fields further, and goes on to the next hash only
when it finished one, so a call stays short however large the hashes. Each page carries the shard's
version: its generation, its batch id and the batch's number of fields. The three hashes change between
pages only by new changes, unless the version moves too: a claim moves changes into a batch with a new id,
an acknowledgement bumps the generation, a give-back moves changes out of the batch, so it has fewer
fields. So the caller keeps the pages of one version and starts over when it moved.

KEYS: the shard's generation, batch hash, pending hash and hash of unknown counters' changes; one slot.
ARGV[1] a MATCH pattern for the fields ('* <counter>@<letter>*', glob characters escaped), ARGV[2] what
follows the id in them ('<counter>@<letter>'), ARGV[3] from and ARGV[4] to: starts in [from, to) count
(Unix seconds), ARGV[5] the hash to walk (1 pending, 2 given back, 3 batch; 4: none, the version only),
ARGV[6] its HSCAN cursor, ARGV[7] count.
Returns {generation ('' if none), batch id ('' if none), batch fields, next hash (4: done), its cursor,
then per field found: its hash (1-3), encoded id, start, change}. HSCAN may give a field twice: the
caller keeps one per hash and field.
]]

local generation, batch, pending, unknown = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pattern, suffix, from, to = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local hash, cursor, count = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local hashes = { pending, unknown, batch }
local found = {}

while hash <= 3 do
  local reply = redis.call('HSCAN', hashes[hash], cursor, 'MATCH', pattern, 'COUNT', count)
  local entries = reply[2]
  for i = 1, #entries, 2 do
    local field = entries[i]
    local space = string.find(field, ' ', 1, true)
    local start = space and string.sub(field, space + 1, space + #suffix) == suffix
      and string.match(string.sub(field, space + 1 + #suffix), '^%d+$')
    if start and tonumber(start) >= from and tonumber(start) < to then
      found[#found + 1] = hash
      found[#found + 1] = string.sub(field, 1, space - 1)
      found[#found + 1] = start
      found[#found + 1] = entries[i + 1]
    end
  end
  cursor = reply[1]
  if cursor ~= '0' then break end
  hash = hash + 1
end

local out = {
  redis.call('GET', generation) or '', redis.call('HGET', batch, '#id') or '', redis.call('HLEN', batch),
  hash, cursor,
}
for i = 1, #found do out[#out + 1] = found[i] end
return out
`;
