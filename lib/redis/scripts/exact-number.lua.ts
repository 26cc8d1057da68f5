/**
 * Lua helpers for scripts that do arithmetic on counter values.
 * `exact` gives a value in a form that leaves Lua without rounding: the number itself below 10^14
 * (a reply turns it into an integer, an argument of redis.call into its digits, both exact there), else
 * the `%.0f` string: Lua's own conversion keeps only 14 digits, and ioredis decodes integer replies
 * within 46 of ±(2^53-1) inexactly. `string.format` costs more than the command it feeds, so only the
 * rare large value pays for it.
 * `exact_sum` adds an integer to a decimal field value when the sum is exact as a double (both within
 * ±2^53), and returns nil otherwise: the caller then lets HINCRBY add in 64-bit integers.
 */
export const EXACT_NUMBER_LUA = `
local function exact(number)
  if number > -1e14 and number < 1e14 then return number end
  return string.format('%.0f', number)
end

local function exact_sum(field, delta)
  local value = (tonumber(field) or 0) + delta
  if math.abs(value) < 9007199254740992 and math.abs(tonumber(field) or 0) < 9007199254740992 then
    return exact(value)
  end
  return nil
end
`;
