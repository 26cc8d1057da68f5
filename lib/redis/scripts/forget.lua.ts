/** The forget script: see the comment at its top. */
export const FORGET_LUA = String.raw`#!lua flags=allow-oom
--[[
Forgets the rows of a batch that is no longer the shard's batch in flight, once its transaction has ended:
Redis lost its data while the batch was being written (or another flusher finished the batch). A row
loaded from the database while the batch was in flight and Redis no longer knew of it holds a value
that may miss the batch (committed since) or count it (read inside the transaction, which then rolled
back): its hash goes, so that it is loaded again, from the database value plus its pending changes. The
generation moves on, so that a load that read the database before this call loads nothing
(seed.lua.ts).

KEYS: the shard's batch hash and generation, then the hashes of the batch's rows; one slot.
ARGV[1] the batch id.
Returns 0 when the batch is still the shard's batch in flight (nothing done: it is finished by whoever
holds the shard's lease); 1 when the rows were forgotten; 2 when they were, and the generation key was
missing (Redis lost the shard's data): it is made again, at 1.
Invariant: only rows' cached values are deleted; a change waits in the pending hash, never in a row.
Runs on a Redis full under noeviction (allow-oom): the flush is what drains it, and this script adds
at most a lease or a few fields while the flush frees whole batches.
]]

if redis.call('HGET', KEYS[1], '#id') == ARGV[1] then return 0 end
for k = 3, #KEYS do redis.call('DEL', KEYS[k]) end
local lost = redis.call('EXISTS', KEYS[2]) == 0
redis.call('INCR', KEYS[2])
if lost then return 2 end
return 1
`;
