/**
 * Reads rows of one or more shards, in one call: on a single Redis every shard a page touches is read
 * at once (a script call costs far more than the reads in it); on a cluster the caller sends one call
 * per slot, so every key of a call is in one slot there.
 *
 * KEYS, per shard: its generation.
 * ARGV, per shard (same order): its row key prefix, the number n of its rows, the number k of
 * counters, the k counter names, the n encoded row ids. k is 0 for the counters of the shard before
 * (a page's shards are mostly of one entity: 54 shards of a 100-row page sent their 3 names once
 * instead of 54 times). The row keys are built here from the prefix
 * (so they are in the slot of the shard's generation key, like every key of the shard): sent whole as
 * KEYS, 100 row keys made the request about twice as long, and on a cluster ioredis hashes every
 * declared key to route the call.
 * Returns one string of lines: per shard its generation (an empty line when every row of the shard has
 * every counter: nothing to seed, so nothing to compare), then per row the live values (`v:` fields) of
 * the k counters joined by spaces, an empty value for a counter the row has none of (not seeded for
 * it). Values are decimal integers, so neither a value nor the generation holds a space or a line break.
 * One string instead of an array of arrays: ioredis decodes a reply element by element, and for a page
 * of 100 rows that took longer than Redis took to run the script (about 600 of 1,000 µs per page on this
 * project's machine; 200 of 500 µs as one string). HMGET of the live fields instead of HGETALL: only the
 * counters asked for, in their order, and every field read costs Redis a conversion into Lua.
 * The generation lets a later seed detect a flush acknowledged in between.
 */
export const READ_LUA = `
local out, arg, names, k = {}, 1, {}, 0
for key = 1, #KEYS do
  local prefix, rows, counters = ARGV[arg], tonumber(ARGV[arg + 1]), tonumber(ARGV[arg + 2])
  if counters > 0 then
    k, names = counters, {}
    for j = 1, k do names[j] = 'v:' .. ARGV[arg + 2 + j] end
  end
  arg = arg + 3 + counters
  local generationAt, missing = #out + 1, false
  out[generationAt] = ''
  for i = arg, arg + rows - 1 do
    local values = redis.call('HMGET', prefix .. ARGV[i], unpack(names))
    for j = 1, k do
      if not values[j] then
        values[j] = ''
        missing = true
      end
    end
    out[#out + 1] = table.concat(values, ' ')
  end
  -- Only a shard with a row to seed needs its generation (a GET per shard was a fifth of the script).
  if missing then out[generationAt] = redis.call('GET', KEYS[key]) or '0' end
  arg = arg + rows
end
return table.concat(out, '\\n')
`;
