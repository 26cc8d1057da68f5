import pg from 'pg';
const c = new pg.Client({ host: '127.0.0.1', user: 'postgres', database: 'test' });
await c.connect();
await c.query('DROP TABLE IF EXISTS scratch_size');
await c.query('CREATE TABLE scratch_size (id INT PRIMARY KEY, a BIGINT NOT NULL DEFAULT 0, b BIGINT NOT NULL DEFAULT 0, c BIGINT NOT NULL DEFAULT 0)');
await c.query('INSERT INTO scratch_size (id) SELECT g FROM generate_series(1, 100000) g');
for (const n of [250, 500, 1000, 2000, 5000]) {
  const reps = Math.floor(40000 / n);
  let t = 0;
  for (let r = 0; r < reps; r++) {
    const ids = Array.from({ length: n }, (_, i) => 1 + ((r * n + i * 7) % 100000));
    const uniq = [...new Set(ids)].sort((x, y) => x - y);
    const params = [];
    const tuples = uniq.map((id) => { params.push(id, 3, 3, 3); const b = params.length; return `($${b-3}::int, $${b-2}::bigint, $${b-1}::bigint, $${b}::bigint)`; });
    params.push(uniq);
    const sql = `UPDATE scratch_size AS t SET a = t.a + v.d0, b = t.b + v.d1, c = t.c + v.d2 FROM (VALUES ${tuples.join(', ')}) AS v(id, d0, d1, d2) WHERE t.id = v.id AND t.id = ANY($${params.length}::int[])`;
    const t0 = performance.now();
    await c.query('BEGIN'); await c.query(sql, params); await c.query('COMMIT');
    t += performance.now() - t0;
  }
  console.log(n, (t / reps).toFixed(2), 'ms/tx', ((t / reps) / n * 1000).toFixed(2), 'µs/row');
}
await c.query('DROP TABLE scratch_size');
await c.end();
