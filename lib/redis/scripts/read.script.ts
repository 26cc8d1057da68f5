/**
 * Reads rows of one or more shards, in one call: on a single Redis every shard a page touches is read
 * at once (a script call costs far more than the reads in it); on a cluster the caller sends one call
 * per slot, so every key of a call is in one slot there.
 *
 * KEYS, per shard: its generation, then its row hashes.
 * ARGV, per shard (same order): the number of its rows.
 * Returns one string of lines: per shard its generation, then per row its fields and values as HGETALL
 * gives them, joined by spaces (an empty line when Redis does not hold the row). Field names are `v:`
 * or `p:` and a counter name (letters, digits, `_`, `-`), values decimal integers: neither holds a
 * space or a line break. One string instead of an array of arrays: ioredis decodes a reply element by
 * element, and for a page of 100 rows that took longer than Redis took to run the script (about 600 of
 * 1,000 µs per page on this project's machine; 200 of 500 µs as one string). The caller picks the
 * `v:` (live) fields.
 * The generation lets a later seed detect a flush acknowledged in between.
 */
export const READ_LUA = `
local out, key = {}, 1
for arg = 1, #ARGV do
  local rows = tonumber(ARGV[arg])
  out[#out + 1] = redis.call('GET', KEYS[key]) or '0'
  for i = key + 1, key + rows do
    out[#out + 1] = table.concat(redis.call('HGETALL', KEYS[i]), ' ')
  end
  key = key + 1 + rows
end
return table.concat(out, '\\n')
`;
