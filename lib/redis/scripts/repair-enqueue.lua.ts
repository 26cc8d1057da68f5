/** The repair enqueue script: see the comment at its top. */
export const REPAIR_ENQUEUE_LUA = String.raw`
--[[
Queues a walk of each given counter after a loss of Redis data. Only the instance that made the lost
generation keys again queues it (other instances notice the same loss by a generation going back), and
walks not started yet absorb the losses noticed meanwhile, so that one loss makes one walk.

KEYS[1] the repair jobs hash. ARGV[1] delay (ms) before the walk may start, ARGV[2] a new walk id,
ARGV[3..] the counters ('<entity key> <counter>').
Each job is '<walk id> <not before (ms, Redis clock)> <progress>', progress '-' until the walk starts.
Every counter gets the new walk id (a step begun under the old one can then not record itself), starting
no earlier than the delay from now: a counter with no job gets one, one not started keeps the later of
its start and this one, and one under way starts over (it began before this loss).
Returns the number of counters queued.
Invariant: no walk starts less than the delay after a loss it repairs was noticed.
]]

local jobs, delay, walk = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local time = redis.call('TIME')
local notBefore = time[1] * 1000 + math.floor(time[2] / 1000) + delay
for i = 3, #ARGV do
  local job = redis.call('HGET', jobs, ARGV[i])
  local start = notBefore
  if job then
    local since, progress = string.match(job, '^%S+ (%d+) (.*)$')
    if progress == '-' then start = math.max(start, tonumber(since)) end
  end
  redis.call('HSET', jobs, ARGV[i], walk .. ' ' .. string.format('%d', start) .. ' -')
end
return #ARGV - 2
`;
