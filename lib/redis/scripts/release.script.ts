/**
 * Gives a shard's lease back, only if the caller still holds it.
 *
 * KEYS[1] lease. ARGV[1] lease token. Returns 1 when released, 0 when the lease was not the caller's.
 */
export const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;
