/**
 * Lua piece (`--@include clock`, see lua.loader.ts): Redis's clock, the one clock every instance shares.
 * Included by row-change.lua.ts and buckets.lua.ts.
 */
export const CLOCK_LUA = String.raw`
-- Redis's clock in ms, read once per call: a call runs at one instant for everyone else.
local clock
local function now_ms()
  if not clock then
    local time = redis.call('TIME')
    clock = time[1] * 1000 + math.floor(time[2] / 1000)
  end
  return clock
end
`;
