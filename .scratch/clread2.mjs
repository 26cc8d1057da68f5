import { Cluster } from 'ioredis';
import { READ_LUA } from '../dist/redis/scripts/read.script.js';
import { CounterKeys } from '../dist/redis/keys.js';
const c = new Cluster([{ host: '127.0.0.1', port: 7000 }], { scaleReads: 'master' });
c.defineCommand('rd', { lua: READ_LUA });
const keys = new CounterKeys('scratchrd', 8);
const ids = Array.from({ length: 100 }, (_, i) => String(1000 + i * 13));
const byShard = new Map();
for (const id of ids) { const s = keys.shardOf(id); if (!byShard.has(s)) byShard.set(s, []); byShard.get(s).push(id); }
const shards = [...byShard].map(([s, rows]) => ({ keys: keys.shard('bench_post', s), rows }));
await Promise.all(ids.map((id) => c.hset(keys.shard('bench_post', keys.shardOf(id)).row(id), 'v:a', 1234, 'v:b', 56789, 'v:c', 3, 'p:a', 1)));
await Promise.all(shards.map((s) => c.set(s.keys.generation, '7')));
const names = ['a', 'b', 'c'];
const nodeOf = (slot) => c.slots[slot].join(',');
async function viaScripts() {
  const byNode = new Map();
  for (const s of shards) { const n = nodeOf(s.keys.slot); if (!byNode.has(n)) byNode.set(n, []); byNode.get(n).push(s); }
  const out = await Promise.all([...byNode.values()].map((list) => {
    const p = c.pipeline();
    for (const s of list) p.rd(1 + s.rows.length, s.keys.generation, ...s.rows.map((id) => s.keys.row(id)), s.rows.length, 3, ...names);
    return p.exec();
  }));
  return out.flat().map(([, r]) => r.split('\n').slice(1).map((l) => l.split(' ').map(Number)));
}
async function viaCommands() {
  const byNode = new Map();
  for (const s of shards) { const n = nodeOf(s.keys.slot); if (!byNode.has(n)) byNode.set(n, []); byNode.get(n).push(s); }
  const fields = names.map((n) => 'v:' + n);
  const out = await Promise.all([...byNode.values()].map((list) => {
    const p = c.pipeline();
    for (const s of list) { p.get(s.keys.generation); for (const id of s.rows) p.hmget(s.keys.row(id), ...fields); }
    return p.exec();
  }));
  return out.flat().filter(([, r]) => Array.isArray(r)).map(([, r]) => r.map(Number));
}
for (const [name, fn] of [['scripts', viaScripts], ['scripts', viaScripts]]) {
  for (let i = 0; i < 200; i++) await fn();
  const lat = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < 2000; i++) { const t = performance.now(); await fn(); lat.push(performance.now() - t); }
  const cpu = process.cpuUsage(cpu0);
  lat.sort((a, b) => a - b);
  console.log(name.padEnd(9), 'p50', lat[1000].toFixed(3), 'p99', lat[1980].toFixed(3), 'cpu/call µs', ((cpu.user + cpu.system) / 2000).toFixed(0));
}
const all = await Promise.all(ids.map((id) => c.del(keys.shard('bench_post', keys.shardOf(id)).row(id))));
await Promise.all(shards.map((s) => c.del(s.keys.generation)));
c.disconnect();
