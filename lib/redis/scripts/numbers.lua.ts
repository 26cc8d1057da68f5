/**
 * Lua piece (`--@include numbers`, see lua.loader.ts): the largest safe integer, and how a script returns
 * a number Redis passes on exactly. Included by row-change.lua.ts and seed.lua.ts.
 */
export const NUMBERS_LUA = String.raw`
local MAX_SAFE = 9007199254740991

-- A value Redis returns exactly: the number below 10^14, else its digits (Lua's own conversion keeps 14).
local function exact(number)
  if number > -1e14 and number < 1e14 then return number end
  return string.format('%.0f', number)
end
`;
