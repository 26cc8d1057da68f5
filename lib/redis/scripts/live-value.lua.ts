/**
 * Lua helpers shared by the scripts that report a counter's live value, b + p + f.
 * Values leave Redis as decimal strings: ioredis decodes integer replies within 46 of ±(2^53-1)
 * inexactly, and Lua's tostring keeps only 14 digits, so `%.0f` is the exact form.
 */
export const LIVE_VALUE_LUA = `
local function live_value(base, pending, inflight)
  return tonumber(base) + (tonumber(pending) or 0) + (tonumber(inflight) or 0)
end

local function exact(number)
  return string.format('%.0f', number)
end
`;
