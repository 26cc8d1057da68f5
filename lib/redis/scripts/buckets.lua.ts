/**
 * Lua piece (`--@include buckets`, see lua.loader.ts): where the changes of a windowed counter go by time,
 * for the change scripts (increment.lua.ts), the claim (claim.lua.ts) and the acknowledgement (ack.lua.ts).
 */
export const BUCKETS_LUA = String.raw`
--@include clock
--[[
A windowed counter comes to a script as '<name>@<letter>', the letter of its finest granularity
(CounterField's scriptName; the coarser buckets are made of the finest ones in the database). Besides
its pending change '<encoded id> <name>', each change of it adds its delta to the pending hash's field
'<encoded id> <name>@<letter><start>': start is when the bucket holding the change's instant begins
(Unix seconds, UTC, by Redis's clock). The flush writes those into CounterBucket with the total, in one
transaction. (The scripts take several letters too, one bucket each.)
Invariant: a row's pending bucket fields all hold changes made since it joined the dirty set, so a claim
of some of a shard's rows finds each row's fields from its dirty-set score on (bucket_fields).
]]
local BUCKET_SECONDS = { h = 3600, d = 86400 }
-- A claim looks this much before a row's score for its buckets: a replica promoted after a failover
-- may run a clock a little behind its old primary's, and a change there lands in an earlier bucket.
local CLOCK_SKEW_MS = 3600000

-- A counter's name, and the letters of its granularities (nil for a plain counter).
local function split_windows(counter)
  local at = string.find(counter, '@', 1, true)
  if not at then return counter, nil end
  return string.sub(counter, 1, at - 1), string.sub(counter, at + 1)
end

-- Per granularity letter, the end of its current bucket's field names ('@h1767225600'): the same for
-- every change of a call, which runs at one instant.
local current_suffixes = {}
local function current_suffix(letter)
  local suffix = current_suffixes[letter]
  if not suffix then
    local seconds = math.floor(now_ms() / 1000)
    suffix = '@' .. letter .. string.format('%d', seconds - seconds % BUCKET_SECONDS[letter])
    current_suffixes[letter] = suffix
  end
  return suffix
end

-- Adds a change (delta as text) of a windowed counter to its buckets now; 'field' is its pending
-- change's field, '<encoded id> <name>'.
local function add_to_buckets(pending, field, letters, text)
  for l = 1, #letters do
    redis.call('HINCRBY', pending, field .. current_suffix(string.sub(letters, l, l)), text)
  end
end

-- Appends to 'fields' the bucket fields of 'field' that changes made from 'since_ms' until now may have made.
local function bucket_fields(fields, field, letters, since_ms)
  local last = math.floor(now_ms() / 1000)
  local first = math.floor((since_ms - CLOCK_SKEW_MS) / 1000)
  for l = 1, #letters do
    local letter = string.sub(letters, l, l)
    local length = BUCKET_SECONDS[letter]
    for start = first - first % length, last, length do
      fields[#fields + 1] = field .. '@' .. letter .. string.format('%d', start)
    end
  end
end
`;
