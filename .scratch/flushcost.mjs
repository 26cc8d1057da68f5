import Redis from 'ioredis';
import { CLAIM_LUA } from '../dist/redis/scripts/claim.script.js';
import { ACK_LUA } from '../dist/redis/scripts/ack.script.js';
const r = new Redis({ port: 6390 });
const ROWS = +(process.argv[2] ?? 500);
const tag = 'ctr:{bench:1}';
const stats = async () => {
  const info = await r.info('commandstats');
  const m = [...info.matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g)];
  return Object.fromEntries(m.map(([, c, calls, usec]) => [c, { calls: +calls, usec: +usec }]));
};
let claimUs = 0, ackUs = 0;
for (let round = 0; round < 20; round++) {
  await r.flushall();
  const p = r.pipeline();
  for (let i = 0; i < ROWS; i++) {
    p.hset(`${tag}:r:${i + 1000}`, 'b:likes', 123456, 'b:views', 9876543, 'b:answers', 17, 'p:likes', 3, 'p:views', 5, 'p:answers', -1);
    p.zadd(`${tag}:dirty`, Date.now() + i, String(i + 1000));
  }
  p.set(`${tag}:gen`, '0');
  await p.exec();
  await r.config('resetstat');
  const claim = await r.eval(CLAIM_LUA, 4, `${tag}:dirty`, `${tag}:batch`, `${tag}:lease`, `${tag}:gen`, `${tag}:r:`, 'tok', 30000, 'batch1', 500, 3600, Date.now());
  const s1 = await stats();
  await r.config('resetstat');
  await r.eval(ACK_LUA, 4, `${tag}:batch`, `${tag}:lease`, `${tag}:gen`, `${tag}:dirty`, `${tag}:r:`, 'batch1', 3600, 'tok', '1');
  const s2 = await stats();
  if (round >= 5) { claimUs += s1.eval.usec; ackUs += s2.eval.usec; }
  if (round === 0) console.log('claim reply len', claim.length);
}
console.log(`rows ${ROWS}: claim ${(claimUs / 15 / ROWS).toFixed(2)} µs/row, ack ${(ackUs / 15 / ROWS).toFixed(2)} µs/row`);
r.disconnect();
