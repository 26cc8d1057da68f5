/** The status script: see the comment at its top. */
export const STATUS_LUA = String.raw`
--[[
What shards have waiting for the database: every shard of a single Redis in one call (at most
MAX_SHARDS_PER_STATUS_CALL), those of one slot per call on a cluster. Every flush of every instance
starts with it, so a quiet flush costs one round trip per node.

KEYS, per shard: its dirty set, batch hash and generation. ARGV: none.
Returns one string: Redis's clock (ms), then a line per shard, '<dirty rows>,<when the oldest became
dirty (ms)>,<rows in the claimed batch>,<when the batch's oldest row became dirty (ms)>,<generation>',
each field empty where there is none (the generation when its key is missing). Times are Redis's, so
ages do not depend on the app servers' clocks.
]]

local now = redis.call('TIME')
local lines = { tostring(now[1] * 1000 + math.floor(now[2] / 1000)) }
for i = 1, #KEYS, 3 do
  local rows = redis.call('ZCARD', KEYS[i])
  local oldest = ''
  if rows > 0 then oldest = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')[2] end
  local batch = redis.call('HMGET', KEYS[i + 1], '#rows', '#since')
  lines[#lines + 1] = rows .. ',' .. oldest .. ',' .. (batch[1] or '') .. ',' .. (batch[2] or '') .. ','
    .. (redis.call('GET', KEYS[i + 2]) or '')
end
return table.concat(lines, '\n')
`;
