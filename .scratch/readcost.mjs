import Redis from 'ioredis';
import { READ_LUA } from '../dist/redis/scripts/read.script.js';
import { CounterKeys } from '../dist/redis/keys.js';
const r = new Redis({ port: 6390 });
await r.flushall();
const keys = new CounterKeys('ctr', 64);
const ids = Array.from({ length: 100 }, (_, i) => String(i + 1));
const byShard = new Map();
for (const id of ids) { const s = keys.shardOf(id); if (!byShard.has(s)) byShard.set(s, []); byShard.get(s).push(id); }
const shards = [...byShard].map(([s, rows]) => ({ keys: keys.shard('bench_post', s), rows }));
for (const [i, id] of ids.entries()) {
  const row = keys.shard('bench_post', keys.shardOf(id)).row(id);
  await r.hset(row, 'v:like_count', 1234 + i, 'v:view_count', 56789, 'v:comment_count', 3);
  if (i % 2 === 0) await r.hset(row, 'p:like_count', 5);
}
for (const s of shards) await r.set(s.keys.generation, '7');
const names = ['like_count', 'view_count', 'comment_count'];
const variants = {
  current: READ_LUA,


};
for (const [name, lua] of Object.entries(variants)) {
  const sha = await r.script('LOAD', lua);
  const keysArg = shards.map((s) => s.keys.generation);
  const args = shards.flatMap((s) => [s.keys.rowPrefix, s.rows.length, 3, ...names, ...s.rows]);
  for (let i = 0; i < 200; i++) await r.evalsha(sha, keysArg.length, ...keysArg, ...args);
  await r.config('resetstat');
  for (let i = 0; i < 1000; i++) await r.evalsha(sha, keysArg.length, ...keysArg, ...args);
  const info = await r.info('commandstats');
  console.log(name.padEnd(8), info.match(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/)[1], 'µs/call');
}
r.disconnect();
