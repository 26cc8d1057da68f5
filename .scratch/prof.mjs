import fs from 'node:fs';
const p = JSON.parse(fs.readFileSync(process.argv[2]));
const self = new Map();
const dt = new Map();
p.samples.forEach((id, i) => dt.set(id, (dt.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
const total = p.timeDeltas.reduce((a, b) => a + b, 0);
for (const n of p.nodes) {
  const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
  self.set(k, (self.get(k) ?? 0) + (dt.get(n.id) ?? 0));
}
console.log('total ms', (total / 1000).toFixed(0));
[...self].sort((a, b) => b[1] - a[1]).slice(0, +(process.argv[3] ?? 40)).forEach(([k, v]) => console.log((v / 1000).toFixed(0).padStart(7), k));
