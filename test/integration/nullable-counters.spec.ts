import { beforeAll, describe, expect, it } from 'vitest';
import { Tally } from '../fixtures/entities.js';
import type { CounterApp } from '../support/counter-app.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { DATABASES } from '../support/databases.js';

// A nullable counter column may hold NULL: a read gives it as 0, and a flush adds to it as to 0, whether
// the row was loaded into Redis before its change or by it.
describe.each(DATABASES)('a nullable counter column on %s', (database) => {
  const suite = useCounterSuite(database, 'nullable', { shards: 2 }, 1, [Tally]);
  let counter: CounterApp;
  beforeAll(() => void (counter = suite.counter));

  it('reads NULL as 0 and adds the delta to it as to 0, beside a NOT NULL counter', async () => {
    const repository = counter.dataSource.getRepository(Tally);
    const rows = await repository.save([{ maybeCount: null }, { maybeCount: 7 }, { maybeCount: null }]);
    const ids = rows.map((row) => row.id);
    // The first row changes before it is read (seeded from NULL), the third after a read of its NULL.
    expect(await counter.counters.get(Tally, ids[2], 'maybe_count')).toBe(0);
    for (const [i, id] of ids.entries()) {
      await counter.counters.increment(Tally, id, 'maybe_count', i + 2);
      await counter.counters.increment(Tally, id, 'sure_count', 10 * (i + 1));
    }
    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report.rows).toBe(3);

    const stored = await repository.find({ order: { id: 'ASC' } });
    expect(stored.map(({ maybeCount, sureCount }) => [maybeCount, sureCount])).toEqual([
      [2, 10],
      [10, 20],
      [4, 30],
    ]);
  });
});
