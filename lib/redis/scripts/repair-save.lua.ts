/** The repair save script: see the comment at its top. */
export const REPAIR_SAVE_LUA = String.raw`
--[[
Records how far a walk went (or that it finished), only for the instance holding the lease and only
while the job is still that walk.

KEYS[1] the repair jobs hash, KEYS[2] the repair lease. ARGV[1] lease token, ARGV[2] the counter
('<entity key> <counter>'), ARGV[3] the walk id, ARGV[4] its progress, '' when the walk finished (the
job is then removed).
Returns 1 when recorded, 0 when the lease is another's (or ran out) or the job is gone or another walk
(a loss noticed since queued the counter again): the caller must then drop this walk.
Invariant: a walk that lost its lease, or that a newer loss replaced, never records anything.
]]

local jobs, lease, token, counter, walk, progress = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('GET', lease) ~= token then return 0 end
local job = redis.call('HGET', jobs, counter)
if not job then return 0 end
local current, since = string.match(job, '^(%S+) (%d+) ')
if current ~= walk then return 0 end
if progress == '' then
  redis.call('HDEL', jobs, counter)
else
  redis.call('HSET', jobs, counter, walk .. ' ' .. since .. ' ' .. progress)
end
return 1
`;
