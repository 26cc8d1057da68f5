/** The read script: see the comment at its top. */
export const READ_LUA = String.raw`
--[[
Reads the live values of rows of one or more shards, in one call (on a cluster the caller sends one
call per slot).

KEYS, per shard: its generation, then the hashes of its rows asked for.
ARGV[1], a line per shard, in the order of KEYS: '<n>|<counters>', n its number of rows and counters
joined by spaces, left empty where they are those of the line before (a page's shards are mostly of one
entity). One argument rather than two per shard: a client encodes each argument on its own, which for a
page of 100 rows over 50 shards cost more than the rest of the request.
Returns one string of values joined by spaces: per shard its generation ('' when every row has every
counter: nothing to load, so nothing to compare), then per row its live values of the counters ('' for
a counter it has none of: the row is not loaded). Values are decimal integers, so none holds a space.
One string rather than nested arrays: a client decodes a reply element by element, which for a page of
100 rows cost more than running the script (see docs/PERFORMANCE.md, "Reads in one string").
The generation lets the load that follows detect a flush acknowledged in between (seed.lua.ts).
]]

local out, k, names = {}, 1, {}
for rows, counters in string.gmatch(ARGV[1], '(%d+)|([^\n]*)\n') do
  local n = tonumber(rows)
  if counters ~= '' then
    names = {}
    for name in string.gmatch(counters, '%S+') do names[#names + 1] = 'v:' .. name end
  end
  local generation, at, missing = KEYS[k], #out + 1, false
  out[at] = ''
  for r = k + 1, k + n do
    local values = redis.call('HMGET', KEYS[r], unpack(names))
    for j = 1, #names do
      if not values[j] then
        values[j] = ''
        missing = true
      end
    end
    out[#out + 1] = table.concat(values, ' ')
  end
  if missing then out[at] = redis.call('GET', generation) or '0' end
  k = k + n + 1
end
return table.concat(out, ' ')
`;
