/**
 * Takes (or renews) a shard's lease and claims a batch: the rows' pending deltas leave their `p:` fields
 * for the shard's batch hash, which holds them until the database has them.
 *
 * KEYS[1] dirty set (sorted by when each row became dirty), KEYS[2] batch hash, KEYS[3] lease,
 * KEYS[4] generation (all one slot).
 * ARGV[1] row key prefix of the shard, ARGV[2] lease token, ARGV[3] lease ms, ARGV[4] new batch id,
 * ARGV[5] max rows, ARGV[6] TTL of clean rows (seconds), ARGV[7] now (ms), ARGV[8..] the counters to
 * claim (the entity's).
 * Every reply starts with {kind, lost, generation}: lost is 1 when the shard's generation key was
 * missing (it never expires, so Redis lost this shard's data: restart without persistence, failover to a
 * replica that was behind, eviction); the key is then recreated at 0. Then:
 * {'busy', lost, gen} when another flusher holds the lease; {'empty', lost, gen} when nothing is dirty
 * (no lease taken); {'pending', lost, gen, batchId, more, counters, entries} when a batch left behind
 * must be finished first; {'claimed', lost, gen, batchId, more, counters, entries} for a new batch
 * ({'claimed', lost, gen, '', more} if every delta netted to zero). more is 1 while rows are dirty;
 * counters are the batch's counter names joined by spaces; entries one line per row, "<encoded id>
 * <delta per counter>", joined by line breaks (neither an encoded id nor a counter name holds a space
 * or a line break). Rows are claimed oldest first, so no row waits behind newer ones.
 *
 * A row's `v:` (live) fields do not change: a claim moves no value, it only decides which deltas the
 * batch carries, so the ack has nothing to do per row. A claimed row holds nothing the database will
 * not get from the batch, so it gets the TTL of a clean row here: the seed script refuses to seed a row
 * of the batch while it is in flight, should the row expire before the ack.
 * Invariant: every unflushed delta is in exactly one place: a row's `p:` field (and the id in the dirty
 * set), or the batch hash.
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
local pending = redis.call('HMGET', KEYS[2], '#id', '#counters', '#entries')
if pending[1] then
  redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
  return {'pending', lost, gen, pending[1], redis.call('ZCARD', KEYS[1]) > 0 and 1 or 0, pending[2], pending[3]}
end
if redis.call('ZCARD', KEYS[1]) == 0 then
  return {'empty', lost, gen}
end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
local names = {}
for i = 8, #ARGV do names[#names + 1] = 'p:' .. ARGV[i] end
local popped = redis.call('ZPOPMIN', KEYS[1], ARGV[5])
local lines = {}
-- Per row one read, one delete and the TTL: every redis.call costs about as much as the command it runs.
for p = 1, #popped, 2 do
  local id = popped[p]
  local row = ARGV[1] .. id
  local deltas = redis.call('HMGET', row, unpack(names))
  local held, moved = false, false
  for j = 1, #names do
    local delta = deltas[j]
    if not delta then
      deltas[j] = '0'
    else
      held = true
      if delta ~= '0' then moved = true end
    end
  end
  if held then redis.call('HDEL', row, unpack(names)) end
  redis.call('EXPIRE', row, ARGV[6])
  if moved then lines[#lines + 1] = id .. ' ' .. table.concat(deltas, ' ') end
end
local more = redis.call('ZCARD', KEYS[1]) > 0 and 1 or 0
if #lines == 0 then
  return {'claimed', lost, gen, '', more}
end
local counters = table.concat(ARGV, ' ', 8, #ARGV)
local entries = table.concat(lines, '\\n')
-- #since: when the oldest row of the batch became dirty (the first popped); #rows: rows in the batch.
redis.call('HSET', KEYS[2], '#id', ARGV[4], '#at', ARGV[7], '#since', popped[2], '#rows', #lines,
  '#counters', counters, '#entries', entries)
return {'claimed', lost, gen, ARGV[4], more, counters, entries}
`;
