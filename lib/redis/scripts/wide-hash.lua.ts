/**
 * Lua piece (`--@include wide-hash`, see lua.loader.ts): how a shard's pending hash is kept a hash table.
 * Included by claim.lua.ts (each new pending hash) and row-change.lua.ts (a pending hash a change made).
 */
export const WIDE_HASH_LUA = String.raw`
-- Gives a hash the '#wide' field (no change: readers skip fields starting with '#'), whose value is
-- longer than Redis's hash-max-listpack-value: Redis then keeps the hash as a hash table, which HINCRBY
-- reaches in constant time, instead of a listpack it searches field by field (see docs/PERFORMANCE.md,
-- "Pending hash as a hash table").
local function keep_as_hash_table(hash)
  redis.call('HSET', hash, '#wide', string.rep('-', 65))
end
`;
