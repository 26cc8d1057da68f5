import mysql from 'mysql2/promise';
const c = await mysql.createConnection({ host: '127.0.0.1', user: 'root', database: 'test' });
await c.query('DROP TABLE IF EXISTS scratch_case');
await c.query('CREATE TABLE scratch_case (id INT PRIMARY KEY, a BIGINT NOT NULL DEFAULT 0, b BIGINT NOT NULL DEFAULT 0, c BIGINT NOT NULL DEFAULT 0)');
for (let s = 0; s < 100000; s += 5000) {
  await c.query('INSERT INTO scratch_case (id) VALUES ' + Array.from({ length: 5000 }, (_, i) => `(${s + i + 1})`).join(','));
}
for (const n of [250, 500, 1000, 2000, 4000]) {
  for (const form of ['case', 'join']) {
    const reps = Math.max(2, Math.floor(20000 / n));
    let t = 0;
    for (let r = 0; r < reps; r++) {
      const ids = Array.from({ length: n }, (_, i) => 1 + ((r * n + i * 7) % 100000)).sort((x, y) => x - y);
      const uniq = [...new Set(ids)];
      const params = [];
      let sql;
      if (form === 'case') {
        const cols = ['a', 'b', 'c'].map((col) => {
          const w = uniq.map((id) => { params.push(id, 3); return 'WHEN ? THEN ?'; }).join(' ');
          return `${col} = ${col} + CASE id ${w} ELSE 0 END`;
        });
        for (const id of uniq) params.push(id);
        sql = `UPDATE scratch_case SET ${cols.join(', ')} WHERE id IN (${uniq.map(() => '?').join(',')})`;
      } else {
        const rows = uniq.map((id, i) => { params.push(id, 3, 3, 3); return i === 0 ? 'SELECT ? AS id, ? AS d0, ? AS d1, ? AS d2' : 'SELECT ?, ?, ?, ?'; });
        sql = `UPDATE scratch_case t JOIN (${rows.join(' UNION ALL ')}) v ON t.id = v.id SET t.a = t.a + v.d0, t.b = t.b + v.d1, t.c = t.c + v.d2`;
      }
      const t0 = performance.now();
      await c.query('BEGIN'); await c.execute !== null && await c.query(sql, params); await c.query('COMMIT');
      t += performance.now() - t0;
    }
    console.log(form, n, (t / reps).toFixed(2), 'ms/stmt', ((t / reps) / n * 1000).toFixed(2), 'µs/row');
  }
}
await c.query('DROP TABLE scratch_case');
await c.end();
