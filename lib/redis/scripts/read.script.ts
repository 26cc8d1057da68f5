/**
 * Reads rows of one or more shards, in one call: on a single Redis every shard a page touches is read
 * at once (a script call costs far more than the reads in it); on a cluster the caller sends one call
 * per slot, so every key of a call is in one slot there.
 *
 * KEYS[1]: the generation key of the call's first shard. It only routes the call on a cluster: every
 * key the script builds is in its slot there.
 * ARGV, per slot tag (`prefix:{entity:group}`): the tag, then one string with a line per shard of it,
 * `<shard>|<counters>|<encoded ids>\n`, counters and ids each joined by spaces (neither holds a space, a
 * `|` or a line break: counter names are `[A-Za-z0-9_-]+`, ids are URI-encoded). Counters are left
 * empty where they are those of the line before (a page's shards are mostly of one entity). The keys
 * are built here: `<tag>:<shard>:r:<id>` and `<tag>:<shard>:gen`. A request packed into a few strings
 * instead of an argument per id, counter and shard: a 100-row page over 54 shards was 320 arguments,
 * and ioredis handles each of them (flattening, length, routing hash for each declared key).
 * Returns one string of values joined by spaces: per shard its generation (empty when every row of the
 * shard has every counter: nothing to seed, so nothing to compare), then per row the live values (`v:`
 * fields) of the counters, empty for a counter the row has none of (not seeded for it). Values are
 * decimal integers, so neither a value nor the generation holds a space.
 * One string instead of an array of arrays: ioredis decodes a reply element by element, and for a page
 * of 100 rows that took longer than Redis took to run the script (about 600 of 1,000 µs per page on this
 * project's machine; 200 of 500 µs as one string). HMGET of the live fields instead of HGETALL: only the
 * counters asked for, in their order, and every field read costs Redis a conversion into Lua.
 * The generation lets a later seed detect a flush acknowledged in between.
 */
export const READ_LUA = `
local out, names, k = {}, {}, 0
for a = 1, #ARGV, 2 do
  local slotTag = ARGV[a] .. ':'
  for shard, counters, ids in string.gmatch(ARGV[a + 1], '(%d+)|([^|]*)|([^\\n]*)\\n') do
    if counters ~= '' then
      names, k = {}, 0
      for name in string.gmatch(counters, '%S+') do
        k = k + 1
        names[k] = 'v:' .. name
      end
    end
    local tag = slotTag .. shard
    local rowPrefix = tag .. ':r:'
    local generationAt, missing = #out + 1, false
    out[generationAt] = ''
    for id in string.gmatch(ids, '%S+') do
      local values = redis.call('HMGET', rowPrefix .. id, unpack(names))
      for j = 1, k do
        if not values[j] then
          values[j] = ''
          missing = true
        end
      end
      out[#out + 1] = table.concat(values, ' ')
    end
    -- Only a shard with a row to seed needs its generation (a GET per shard was a fifth of the script).
    if missing then out[generationAt] = redis.call('GET', tag .. ':gen') or '0' end
  end
end
return table.concat(out, ' ')
`;
