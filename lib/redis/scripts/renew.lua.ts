/** The renew script: see the comment at its top. */
export const RENEW_LUA = String.raw`#!lua flags=allow-oom
--[[
Extends the leases a flush still holds, so that a live flusher keeps its shards however long its
transaction takes, while a dead one's leases run out after the lease length (G10).

KEYS: the leases of the shards a flush holds; one slot.
ARGV[1] lease token, ARGV[2] lease ms.
Returns one string of a character per key: '1' when the lease was the caller's and now lasts ARGV[2] ms
more, '0' when it was not (it ran out, or another flusher took it): that shard is no longer the caller's.
Invariant: a lease is only ever extended for the token that holds it; none is taken or made here.
Runs on a Redis full under noeviction (allow-oom): the flush is what drains it, and this script adds
at most a lease or a few fields while the flush frees whole batches.
]]

local token, leaseMs = ARGV[1], ARGV[2]
local renewed = {}
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == token then
    redis.call('PEXPIRE', KEYS[i], leaseMs)
    renewed[i] = '1'
  else
    renewed[i] = '0'
  end
end
return table.concat(renewed)
`;
