/** The give-back script: see the comment at its top. */
export const GIVE_BACK_LUA = String.raw`#!lua flags=allow-oom
--[[
Takes the changes of counters a flusher does not know (it was deployed before they were added to the
entity) out of the batch it claimed, before it writes the batch, into the shard's hash of such changes:
the next claim of the shard by a flusher that knows them takes them (claim.lua.ts), and a row loaded
meanwhile counts them (seed.lua.ts). Done before the write, so a batch the database has only ever holds
changes its writer wrote: a flusher that recovers it has nothing to give back. The hash has no TTL, so a
Redis that evicts keys with one (volatile-*) keeps it; its '#at' field is when changes were last given
back (ms, Redis's clock), from which a claim drops the changes of a counter nobody knows any more.

KEYS: the shard's batch hash, hash of unknown counters' changes, and lease; one slot.
ARGV[1] batch id, ARGV[2] lease token, then field name and delta, over and over.
Returns 1 when given back, 0 when the batch or the lease is no longer the caller's (nothing done).
Runs on a Redis full under noeviction (allow-oom): the flush is what drains it, and this script adds
at most a lease or a few fields while the flush frees whole batches.
]]

local batch, unknown, lease = KEYS[1], KEYS[2], KEYS[3]
if redis.call('HGET', batch, '#id') ~= ARGV[1] or redis.call('GET', lease) ~= ARGV[2] then return 0 end
for i = 3, #ARGV, 2 do
  redis.call('HDEL', batch, ARGV[i])
  redis.call('HINCRBY', unknown, ARGV[i], ARGV[i + 1])
end
local now = redis.call('TIME')
redis.call('HSET', unknown, '#at', now[1] * 1000 + math.floor(now[2] / 1000))
-- A hash given back by an earlier version carries a TTL.
redis.call('PERSIST', unknown)
return 1
`;
