/** The rolling count read script: see the comment at its top. */
export const ROLLING_COUNT_READ_LUA = String.raw`
--[[
Reads, for many rows of one shard at once, the changes of their buckets in windows that the database
may not have yet, for the overlay of rolling counts (RollingCounts): with the shard's generation, batch
id and batch size, so that the caller can tell whether a flush moved any of them while it read the
database. bucket-read.lua.ts does the same for one row's buckets one by one.

KEYS: the shard's generation, batch hash, pending hash and hash of unknown counters' changes; one slot.
ARGV: the number of windows W, then per window what follows the id in its bucket fields
('<counter>@<letter>', buckets.lua.ts), its buckets' length in seconds, the first bucket's start and the
end of the last (Unix seconds); then the rows' encoded ids. With no ids, the version alone.
Returns {generation ('' if none), batch id ('' if none), the batch's number of fields (a give-back moves
fields out of it under the same id), then per row and, within it, per window: its changes pending or
given back (give-back.lua.ts), its changes in the batch in flight}. The pending and given-back changes
are in no database; the batch's are once the ledger has its id.
Cost: per hash, the fewer of its fields and the rows' buckets asked for.
]]

local generation, batch, pending, unknown = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local windowCount = tonumber(ARGV[1])
local windows, bySuffix, bucketsPerRow = {}, {}, 0
for w = 1, windowCount do
  local at = 2 + (w - 1) * 4
  local window = { suffix = ARGV[at], length = tonumber(ARGV[at + 1]), first = tonumber(ARGV[at + 2]),
    last = tonumber(ARGV[at + 3]), index = w }
  windows[w] = window
  bySuffix[window.suffix] = bySuffix[window.suffix] or {}
  table.insert(bySuffix[window.suffix], window)
  bucketsPerRow = bucketsPerRow + (window.last - window.first) / window.length
end
local ids, rowOf = {}, {}
for at = 2 + windowCount * 4, #ARGV do
  ids[#ids + 1] = ARGV[at]
  rowOf[ARGV[at]] = #ids
end
local sums = {}
for i = 1, #ids * windowCount * 2 do sums[i] = 0 end

-- Adds 'value' to slot 'slot' (1: waiting, 2: in flight) of a row's window.
local function addTo(row, window, slot, value)
  local at = ((row - 1) * windowCount + window.index - 1) * 2 + slot
  sums[at] = sums[at] + value
end

-- Adds the changes of 'hash' in the windows to slot 'slot' of the rows'.
local function add(hash, slot)
  if #ids == 0 then return end
  if redis.call('HLEN', hash) <= #ids * bucketsPerRow then
    local entries = redis.call('HGETALL', hash)
    for i = 1, #entries, 2 do
      local field = entries[i]
      local space = string.find(field, ' ', 1, true)
      local row = space and rowOf[string.sub(field, 1, space - 1)]
      if row then
        local suffix, start = string.match(string.sub(field, space + 1), '^(.*@%a)(%d+)$')
        for _, window in ipairs(suffix and bySuffix[suffix] or {}) do
          start = tonumber(start)
          if start >= window.first and start < window.last then addTo(row, window, slot, tonumber(entries[i + 1])) end
        end
      end
    end
    return
  end
  -- HMGET takes a few thousand fields at most (Lua's stack).
  for row = 1, #ids do
    for _, window in ipairs(windows) do
      local prefix = ids[row] .. ' ' .. window.suffix
      for from = window.first, window.last - window.length, 2000 * window.length do
        local fields = {}
        for start = from, math.min(from + 1999 * window.length, window.last - window.length), window.length do
          fields[#fields + 1] = prefix .. string.format('%d', start)
        end
        local values = redis.call('HMGET', hash, unpack(fields))
        for i = 1, #fields do
          if values[i] then addTo(row, window, slot, tonumber(values[i])) end
        end
      end
    end
  end
end

add(pending, 1)
add(unknown, 1)
add(batch, 2)
local out = { redis.call('GET', generation) or '', redis.call('HGET', batch, '#id') or '', redis.call('HLEN', batch) }
for i = 1, #sums do out[#out + 1] = sums[i] end
return out
`;
