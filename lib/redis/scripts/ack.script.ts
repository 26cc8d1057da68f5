/**
 * Acknowledges a batch the database has committed: the batch hash, which held its deltas in flight, goes.
 * Rows are not touched (their `v:` fields have counted the deltas all along), except those missing from
 * the database, whose hashes are deleted along with whatever they still had pending. The batch's
 * changes of counters the flusher did not know (it was deployed before they were added) were not
 * written: they go to the shard's hash of such changes, for a flusher that knows them (claim.script.ts),
 * and expire with it when none comes (a counter removed from the entity).
 *
 * KEYS[1] batch hash, KEYS[2] lease, KEYS[3] generation, KEYS[4] dirty set, KEYS[5] pending hash,
 * KEYS[6] hash of changes of unknown counters (all one slot).
 * ARGV[1] row key prefix, ARGV[2] batch id, ARGV[3] lease token, ARGV[4] '1' to release the lease,
 * ARGV[5] TTL of the hash of unknown counters' changes (seconds), ARGV[6] the number k of the entity's
 * counters, then their k names, the number m of rows missing from the database, their m encoded ids,
 * then field name and delta of each change of an unknown counter.
 * Returns 1 when acknowledged, 0 when the batch was already acknowledged (or lost with Redis data).
 *
 * The generation moves, so that a seed that read the database before this ack retries.
 */
export const ACK_LUA = `
local function release()
  if ARGV[4] == '1' and redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
end
if redis.call('HGET', KEYS[1], '#id') ~= ARGV[2] then
  release()
  return 0
end
local k = tonumber(ARGV[6])
local m = tonumber(ARGV[7 + k])
for i = 8 + k, 7 + k + m do
  redis.call('DEL', ARGV[1] .. ARGV[i])
  redis.call('ZREM', KEYS[4], ARGV[i])
  for c = 7, 6 + k do redis.call('HDEL', KEYS[5], ARGV[i] .. ' ' .. ARGV[c]) end
end
if #ARGV > 7 + k + m then
  for i = 8 + k + m, #ARGV, 2 do redis.call('HINCRBY', KEYS[6], ARGV[i], ARGV[i + 1]) end
  redis.call('EXPIRE', KEYS[6], ARGV[5])
end
redis.call('DEL', KEYS[1])
redis.call('INCR', KEYS[3])
release()
return 1
`;
