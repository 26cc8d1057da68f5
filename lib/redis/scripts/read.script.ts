/**
 * Reads rows of one or more shards, in one call: on a single Redis every shard a page touches is read
 * at once (a script call costs far more than the reads in it); on a cluster the caller sends one call
 * per slot, so every key of a call is in one slot there.
 *
 * KEYS, per shard: its generation, then its row hashes.
 * ARGV, per shard (same order): the number of its rows.
 * Returns, per shard: its generation, then each row's fields and values as HGETALL gives them (empty
 * when Redis does not hold the row). The caller adds b + p + f: done here, that arithmetic and its
 * exact decimal formatting cost more than the reads; HGETALL also takes no field names to convert.
 * The generation lets a later seed detect a flush acknowledged in between.
 */
export const READ_LUA = `
local out, key = {}, 1
for arg = 1, #ARGV do
  local rows = tonumber(ARGV[arg])
  out[#out + 1] = redis.call('GET', KEYS[key]) or '0'
  for i = key + 1, key + rows do
    out[#out + 1] = redis.call('HGETALL', KEYS[i])
  end
  key = key + 1 + rows
end
return out
`;
