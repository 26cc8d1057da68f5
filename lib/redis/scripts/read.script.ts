/**
 * Reads rows of one or more shards, in one call: on a single Redis every shard a page touches is read
 * at once (a script call costs far more than the reads in it); on a cluster the caller sends one call
 * per slot, so every key of a call is in one slot there.
 *
 * KEYS, per shard: its generation, then its row hashes.
 * ARGV, per shard (same order): the number of its rows, the number k of counters, the k counter names.
 * Returns one string of lines: per shard its generation, then per row the live values (`v:` fields) of
 * the k counters joined by spaces, an empty value for a counter the row has none of (not seeded for
 * it). Values are decimal integers, so neither a value nor the generation holds a space or a line break.
 * One string instead of an array of arrays: ioredis decodes a reply element by element, and for a page
 * of 100 rows that took longer than Redis took to run the script (about 600 of 1,000 µs per page on this
 * project's machine; 200 of 500 µs as one string). HMGET of the live fields instead of HGETALL: a dirty
 * row also holds `p:` fields, and every field read costs Redis a conversion into Lua.
 * The generation lets a later seed detect a flush acknowledged in between.
 */
export const READ_LUA = `
local out, key, arg = {}, 1, 1
while arg <= #ARGV do
  local rows, k = tonumber(ARGV[arg]), tonumber(ARGV[arg + 1])
  local names = {}
  for j = 1, k do names[j] = 'v:' .. ARGV[arg + 1 + j] end
  arg = arg + 2 + k
  out[#out + 1] = redis.call('GET', KEYS[key]) or '0'
  for i = key + 1, key + rows do
    local values = redis.call('HMGET', KEYS[i], unpack(names))
    for j = 1, k do
      if not values[j] then values[j] = '' end
    end
    out[#out + 1] = table.concat(values, ' ')
  end
  key = key + 1 + rows
end
return table.concat(out, '\\n')
`;
