/**
 * Lua helpers shared by the scripts that report a counter's live value, b + p + f.
 * `exact` gives a value in a form that leaves Lua without rounding: the number itself below 10^14
 * (a reply turns it into an integer, an argument of redis.call into its digits, both exact there), else
 * the `%.0f` string: Lua's own conversion keeps only 14 digits, and ioredis decodes integer replies
 * within 46 of ±(2^53-1) inexactly. `string.format` costs more than the command it feeds, so only the
 * rare large value pays for it.
 */
export const LIVE_VALUE_LUA = `
local function live_value(base, pending, inflight)
  return tonumber(base) + (tonumber(pending) or 0) + (tonumber(inflight) or 0)
end

local function exact(number)
  if number > -1e14 and number < 1e14 then return number end
  return string.format('%.0f', number)
end
`;
