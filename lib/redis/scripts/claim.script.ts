/**
 * Takes (or renews) a shard's lease and claims a batch: moves pending deltas into flight.
 *
 * KEYS[1] dirty set (sorted by when each row became dirty), KEYS[2] batch hash, KEYS[3] lease,
 * KEYS[4] generation (all one slot).
 * ARGV[1] row key prefix of the shard, ARGV[2] lease token, ARGV[3] lease ms, ARGV[4] new batch id,
 * ARGV[5] max rows, ARGV[6] TTL of clean rows (seconds), ARGV[7] now (ms).
 * Every reply starts with {kind, lost, generation}: lost is 1 when the shard's generation key was
 * missing (it never expires, so Redis lost this shard's data: restart without persistence, failover to a
 * replica that was behind, eviction); the key is then recreated at 0. Then:
 * {'busy', lost, gen} when another flusher holds the lease; {'empty', lost, gen} when nothing is dirty
 * (no lease taken); {'pending', lost, gen, batchId, more, field, delta, …} when a batch left behind must
 * be finished first; {'claimed', lost, gen, batchId, more, field, delta, …} for a new batch
 * ({'claimed', lost, gen, '', more} if every delta netted to zero). A field is "<encoded id>\n<counter>"; more is 1 while rows are dirty.
 * Rows are claimed oldest first, so no row waits behind newer ones.
 *
 * Invariant: every delta is in exactly one place: a row's p: field (and the id in the dirty set), or a
 * row's f: field and the batch hash. Nothing is removed here; the ack moves f: into b:.
 */
export const CLAIM_LUA = `
local lost = 0
if redis.call('EXISTS', KEYS[4]) == 0 then
  redis.call('SET', KEYS[4], '0')
  lost = 1
end
local gen = redis.call('GET', KEYS[4])
local holder = redis.call('GET', KEYS[3])
if holder and holder ~= ARGV[2] then
  return {'busy', lost, gen}
end
local pending = redis.call('HGET', KEYS[2], '#id')
if pending then
  redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
  local out = {'pending', lost, gen, pending, redis.call('ZCARD', KEYS[1]) > 0 and 1 or 0}
  local entries = redis.call('HGETALL', KEYS[2])
  for i = 1, #entries, 2 do
    if string.sub(entries[i], 1, 1) ~= '#' then
      out[#out + 1] = entries[i]
      out[#out + 1] = entries[i + 1]
    end
  end
  return out
end
if redis.call('ZCARD', KEYS[1]) == 0 then
  return {'empty', lost, gen}
end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
local popped = redis.call('ZPOPMIN', KEYS[1], ARGV[5])
local entries = {}
for p = 1, #popped, 2 do
  local id = popped[p]
  local row = ARGV[1] .. id
  -- One read of the row, then at most one HDEL and one HSET: per-field calls cost more than their work.
  local fields = redis.call('HGETALL', row)
  local inflight = {}
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 2) == 'f:' then inflight[string.sub(fields[i], 3)] = true end
  end
  local pending, moved = {}, {}
  for i = 1, #fields, 2 do
    local field = fields[i]
    if string.sub(field, 1, 2) == 'p:' then
      local counter = string.sub(field, 3)
      local delta = fields[i + 1]
      pending[#pending + 1] = field
      if tonumber(delta) ~= 0 then
        if inflight[counter] then
          redis.call('HINCRBY', row, 'f:' .. counter, delta)
        else
          moved[#moved + 1] = 'f:' .. counter
          moved[#moved + 1] = delta
          inflight[counter] = true
        end
        entries[#entries + 1] = id .. '\\n' .. counter
        entries[#entries + 1] = delta
      end
    end
  end
  if #pending > 0 then redis.call('HDEL', row, unpack(pending)) end
  if #moved > 0 then redis.call('HSET', row, unpack(moved)) end
  -- Neither pending nor in flight (every change netted to zero): a cache of database values again.
  if next(inflight) == nil then redis.call('EXPIRE', row, ARGV[6]) end
end
local more = redis.call('ZCARD', KEYS[1]) > 0 and 1 or 0
if #entries == 0 then
  return {'claimed', lost, gen, '', more}
end
-- #since: when the oldest row of the batch became dirty (the first popped); #rows: rows in the batch.
redis.call('HSET', KEYS[2], '#id', ARGV[4], '#at', ARGV[7], '#since', popped[2], '#rows', #popped / 2, unpack(entries))
local out = {'claimed', lost, gen, ARGV[4], more}
for i = 1, #entries do out[#out + 1] = entries[i] end
return out
`;
