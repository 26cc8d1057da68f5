/**
 * What a shard has waiting for the database.
 *
 * KEYS[1] dirty set, KEYS[2] batch hash, KEYS[3] generation (one slot).
 * Returns {dirty rows, when the oldest became dirty (ms) or '', rows in the claimed batch or '',
 * when the batch's oldest row became dirty (ms) or '', Redis's clock (ms), the shard's generation or ''
 * when its key is missing}. Times are Redis's, so ages do not depend on the app servers' clocks.
 */
export const STATUS_LUA = `
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local batch = redis.call('HMGET', KEYS[2], '#rows', '#since')
local now = redis.call('TIME')
return {
  redis.call('ZCARD', KEYS[1]),
  oldest[2] or '',
  batch[1] or '',
  batch[2] or '',
  tostring(now[1] * 1000 + math.floor(now[2] / 1000)),
  redis.call('GET', KEYS[3]) or '',
}
`;
