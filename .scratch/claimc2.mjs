import Redis from 'ioredis';
const r = new Redis({ port: 6390 });
const ROWS = +(process.argv[2] ?? 500);
const tag = 'ctr:{bench:1}';
const CLAIM = `
local k = tonumber(ARGV[8])
local names = {}
for j = 1, k do names[j] = 'p:' .. ARGV[8 + j] end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
local popped = redis.call('ZPOPMIN', KEYS[1], ARGV[5])
local lines, fields = {}, {'#id', ARGV[4], '#at', ARGV[7], '#since', popped[2], '#counters', table.concat(ARGV, ' ', 9, 8 + k)}
local ttl = ARGV[6]
for p = 1, #popped, 2 do
  local id = popped[p]
  local row = ARGV[1] .. id
  local values = redis.call('HMGET', row, unpack(names))
  local any = false
  for j = 1, k do
    local v = values[j]
    if v and v ~= '0' then any = true else values[j] = '0' end
  end
  redis.call('HDEL', row, unpack(names))
  redis.call('EXPIRE', row, ttl)
  if any then
    local deltas = table.concat(values, ' ')
    lines[#lines + 1] = id .. ' ' .. deltas
  end
end
fields[#fields + 1] = '#entries'
fields[#fields + 1] = table.concat(lines, '\\n')
fields[#fields + 1] = '#rows'
fields[#fields + 1] = #lines
redis.call('HSET', KEYS[2], unpack(fields))
return fields[#fields - 2]
`;
const ACK = `
if redis.call('HGET', KEYS[1], '#id') ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('INCR', KEYS[3])
if redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('DEL', KEYS[2]) end
return 1
`;
const stats = async () => {
  const info = await r.info('commandstats');
  const m = [...info.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)];
  return Object.fromEntries(m.map(([, c, calls, usec]) => [c, { calls: +calls, usec: +usec }]));
};
let claimUs = 0, ackUs = 0, nodeUs = 0;
for (let round = 0; round < 20; round++) {
  await r.flushall();
  const p = r.pipeline();
  for (let i = 0; i < ROWS; i++) {
    p.hset(`${tag}:r:${i + 1000}`, 'v:likes', 123456, 'v:views', 9876543, 'v:answers', 17, 'p:likes', 3, 'p:views', 5, 'p:answers', -1);
    p.zadd(`${tag}:dirty`, Date.now() + i, String(i + 1000));
  }
  await p.exec();
  await r.config('resetstat');
  const claim = await r.eval(CLAIM, 4, `${tag}:dirty`, `${tag}:batch`, `${tag}:lease`, `${tag}:gen`, `${tag}:r:`, 'tok', 30000, 'batch1', 500, 3600, Date.now(), 3, 'likes', 'views', 'answers');
  const t0 = process.hrtime.bigint();
  const rows = claim.split('\n').map((l) => { const [id, ...d] = l.split(' '); return { id, d: d.map(Number) }; });
  nodeUs += Number(process.hrtime.bigint() - t0) / 1000;
  const s1 = await stats();
  await r.config('resetstat');
  await r.eval(ACK, 3, `${tag}:batch`, `${tag}:lease`, `${tag}:gen`, 'x', 'batch1', 3600, 'tok');
  const s2 = await stats();
  if (round >= 5) { claimUs += s1.eval.usec; ackUs += s2.eval.usec; }
  if (round === 0) console.log(rows.length, rows[0], await r.hgetall(`${tag}:r:1000`), await r.ttl(`${tag}:r:1000`));
}
console.log(`rows ${ROWS}: claim ${(claimUs / 15 / ROWS).toFixed(2)} µs/row, ack ${(ackUs / 15 / ROWS).toFixed(2)} µs/row, node parse ${(nodeUs/20/ROWS).toFixed(2)}`);
r.disconnect();
