/** The release script: see the comment at its top. */
export const RELEASE_LUA = String.raw`#!lua flags=allow-oom
--[[
Gives a shard's lease back, only if the caller still holds it.

KEYS[1] the shard's lease. ARGV[1] lease token.
Returns 1 when given back, 0 when the lease was not the caller's.
Runs on a Redis full under noeviction (allow-oom): the flush is what drains it, and this script adds
at most a lease or a few fields while the flush frees whole batches.
]]

if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;
