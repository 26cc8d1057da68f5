import Redis from 'ioredis';
const r = new Redis({ port: 6390 });
const tag = 'ctr:{bench:1}';
const ROWS = 500;
await r.flushall();
const p = r.pipeline();
for (let i = 0; i < ROWS; i++) {
  p.hset(`${tag}:r:${i + 1000}`, 'b:likes', 123456, 'b:views', 9876543, 'b:answers', 17, 'p:likes', 3, 'p:views', 5, 'p:answers', -1);
}
await p.exec();
const tests = {
  empty: `for i = 1000, 1000 + ${ROWS} - 1 do local k = ARGV[1] .. i end return 1`,
  hgetall: `for i = 1000, 1000 + ${ROWS} - 1 do redis.call('HGETALL', ARGV[1] .. i) end return 1`,
  exists: `for i = 1000, 1000 + ${ROWS} - 1 do redis.call('EXISTS', ARGV[1] .. i) end return 1`,
  hget: `for i = 1000, 1000 + ${ROWS} - 1 do redis.call('HGET', ARGV[1] .. i, 'p:likes') end return 1`,
  hincrby: `for i = 1000, 1000 + ${ROWS} - 1 do redis.call('HINCRBY', ARGV[1] .. i, 'x', 0) end return 1`,
  hset3: `for i = 1000, 1000 + ${ROWS} - 1 do redis.call('HSET', ARGV[1] .. i, 'b:likes', 123456, 'b:views', 9876543, 'b:answers', 17) end return 1`,
  expire: `for i = 1000, 1000 + ${ROWS} - 1 do redis.call('PEXPIRE', ARGV[1] .. i, 100000000) end return 1`,
  pcall_hget: `for i = 1000, 1000 + ${ROWS} - 1 do redis.pcall('HGET', ARGV[1] .. i, 'p:likes') end return 1`,
};
for (const [name, body] of Object.entries(tests)) {
  const sha = await r.script('LOAD', body);
  for (let k = 0; k < 3; k++) await r.evalsha(sha, 0, `${tag}:r:`);
  await r.config('resetstat');
  for (let k = 0; k < 20; k++) await r.evalsha(sha, 0, `${tag}:r:`);
  const info = await r.info('commandstats');
  const m = info.match(/cmdstat_evalsha:calls=(\d+),usec=(\d+)/);
  console.log(name.padEnd(12), (m[2] / 20 / ROWS).toFixed(2), 'µs/iter');
}
r.disconnect();
