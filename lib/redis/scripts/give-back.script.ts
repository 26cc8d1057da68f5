/**
 * Takes the changes of counters a flusher does not know (it was deployed before they were added to the
 * entity) out of its claimed batch, before it writes the batch, into the shard's hash of such changes:
 * the next claim of the shard by a flusher that knows them takes them (claim.script.ts), and a row
 * loaded meanwhile counts them (seed.script.ts). Done before the write, so that a batch the database
 * has (the ledger holds its id) only ever holds changes its writer wrote: a flusher recovering it then
 * has nothing to give back. The hash expires like a row when no flusher that knows them comes (a
 * counter removed from the entity).
 *
 * KEYS[1] batch hash, KEYS[2] hash of unknown counters' changes, KEYS[3] lease (all one slot).
 * ARGV[1] batch id, ARGV[2] lease token, ARGV[3] TTL (seconds), then field name and delta, over and over.
 * Returns 1 when given back, 0 when the batch or the lease is no longer the caller's (nothing done).
 */
export const GIVE_BACK_LUA = `
if redis.call('HGET', KEYS[1], '#id') ~= ARGV[1] or redis.call('GET', KEYS[3]) ~= ARGV[2] then
  return 0
end
for i = 4, #ARGV, 2 do
  redis.call('HDEL', KEYS[1], ARGV[i])
  redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
`;
