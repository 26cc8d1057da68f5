/**
 * Lua helpers for a script that decides whether a row hash may expire (the seed script; the claim and
 * ack scripts apply the same rule to the fields they have already read with HGETALL).
 * A row with a `p:` (pending) or `f:` (in flight) field holds deltas not yet in the database and must
 * never expire; a row with only `b:` (base) fields is a cache of database values and may.
 */
export const ROW_HELPERS_LUA = `
local function has_unflushed(row)
  local fields = redis.call('HKEYS', row)
  for _, field in ipairs(fields) do
    local kind = string.sub(field, 1, 2)
    if kind == 'p:' or kind == 'f:' then return true end
  end
  return false
end

local function expire_if_clean(row, ttl)
  if not has_unflushed(row) then redis.call('EXPIRE', row, ttl) end
end
`;
