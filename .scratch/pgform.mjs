import pg from 'pg';
const c = new pg.Client({ host: '127.0.0.1', user: 'postgres', database: 'test' });
await c.connect();
await c.query('DROP TABLE IF EXISTS scratch_size');
await c.query('CREATE TABLE scratch_size (id INT PRIMARY KEY, a BIGINT NOT NULL DEFAULT 0, b BIGINT NOT NULL DEFAULT 0, c BIGINT NOT NULL DEFAULT 0, title text default \'hello world\')');
await c.query('INSERT INTO scratch_size (id) SELECT g FROM generate_series(1, 100000) g');
await c.query('VACUUM ANALYZE scratch_size');
const forms = {
  values(uniq) {
    const params = [];
    const tuples = uniq.map((id) => { params.push(id, 3, 3, 3); const b = params.length; return `($${b-3}::int, $${b-2}::bigint, $${b-1}::bigint, $${b}::bigint)`; });
    params.push(uniq);
    return [`UPDATE scratch_size AS t SET a = t.a + v.d0, b = t.b + v.d1, c = t.c + v.d2 FROM (VALUES ${tuples.join(', ')}) AS v(id, d0, d1, d2) WHERE t.id = v.id AND t.id = ANY($${params.length}::int[])`, params];
  },
  unnest(uniq) {
    return [`UPDATE scratch_size AS t SET a = t.a + v.d0, b = t.b + v.d1, c = t.c + v.d2 FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::bigint[]) AS v(id, d0, d1, d2) WHERE t.id = v.id AND t.id = ANY($1::int[])`, [uniq, uniq.map(() => 3), uniq.map(() => 3), uniq.map(() => 3)]];
  },
  unnest_only(uniq) {
    return [`UPDATE scratch_size AS t SET a = t.a + v.d0, b = t.b + v.d1, c = t.c + v.d2 FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::bigint[]) AS v(id, d0, d1, d2) WHERE t.id = v.id`, [uniq, uniq.map(() => 3), uniq.map(() => 3), uniq.map(() => 3)]];
  },
};
for (const n of [260, 1000, 2000]) {
  for (const [name, form] of Object.entries(forms)) {
    const reps = Math.floor(40000 / n);
    let t = 0; let cpu = 0;
    for (let r = 0; r < reps; r++) {
      const ids = Array.from({ length: n }, (_, i) => 1 + ((r * n * 3 + i * 7) % 100000));
      const uniq = [...new Set(ids)].sort((x, y) => x - y);
      const [sql, params] = form(uniq);
      const t0 = performance.now(); const c0 = process.cpuUsage();
      await c.query('BEGIN'); await c.query(sql, params); await c.query('COMMIT');
      t += performance.now() - t0; const c1 = process.cpuUsage(c0); cpu += (c1.user + c1.system) / 1000;
    }
    console.log(n, name.padEnd(12), ((t / reps) / n * 1000).toFixed(2), 'µs/row wall', ((cpu / reps) / n * 1000).toFixed(2), 'µs/row node cpu');
  }
}
const plan = await c.query(`EXPLAIN UPDATE scratch_size AS t SET a = t.a + v.d0 FROM unnest($1::int[], $2::bigint[]) AS v(id, d0) WHERE t.id = v.id`, [[1,2,3],[1,1,1]]);
console.log(plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
await c.query('DROP TABLE scratch_size');
await c.end();
