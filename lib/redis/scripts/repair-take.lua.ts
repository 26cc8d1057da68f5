/** The repair take script: see the comment at its top. */
export const REPAIR_TAKE_LUA = String.raw`
--[[
Takes (or renews) the lease of the deployment's repairs when one of them may start or go on.

KEYS[1] the repair jobs hash, KEYS[2] the repair lease. ARGV[1] lease token, ARGV[2] lease ms.
Replies:
  {'none'}: nothing to repair (a lease the caller held is given back);
  {'busy'}: another instance holds the lease;
  {'wait', ms}: no walk may start for ms more (no lease taken);
  {'due', now, counter, job, counter, job, …}: the lease is the caller's for ARGV[2] ms; every job, due
  or not (see repair-enqueue.lua.ts for their form), and the Redis clock in ms.
Invariant: the lease is only ever taken when free or renewed for the token that holds it.
]]

local jobs, lease, token = KEYS[1], KEYS[2], ARGV[1]
local holder = redis.call('GET', lease)
if holder and holder ~= token then return {'busy'} end
local entries = redis.call('HGETALL', jobs)
if #entries == 0 then
  if holder then redis.call('DEL', lease) end
  return {'none'}
end
local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)
local earliest
for i = 2, #entries, 2 do
  local since = tonumber(string.match(entries[i], '^%S+ (%d+) '))
  if not earliest or since < earliest then earliest = since end
end
if earliest > now then return {'wait', string.format('%d', earliest - now)} end
redis.call('SET', lease, token, 'PX', ARGV[2])
local reply = {'due', string.format('%d', now)}
for i = 1, #entries do reply[#reply + 1] = entries[i] end
return reply
`;
