import { expect } from 'vitest';
import { Tally } from '../fixtures/entities.js';
import type { CounterApp } from './counter-app.js';

/**
 * Counts on three `Tally` rows, one of them non-NULL, and flushes: the first row changes before it is read
 * (loaded from NULL), the third after a read of its NULL. Checks the read, the flush and what the table
 * holds after it: NULL counted as 0, beside a NOT NULL counter.
 */
export async function countOnNullableColumn(counter: CounterApp): Promise<void> {
  const repository = counter.dataSource.getRepository(Tally);
  const rows = await repository.save([{ maybeCount: null }, { maybeCount: 7 }, { maybeCount: null }]);
  const ids = rows.map((row) => row.id);
  expect(await counter.counters.get(Tally, ids[2], 'maybe_count')).toBe(0);
  for (const [i, id] of ids.entries()) {
    await counter.counters.increment(Tally, id, 'maybe_count', i + 2);
    await counter.counters.increment(Tally, id, 'sure_count', 10 * (i + 1));
  }
  const report = await counter.counters.flush();
  expect(report.error).toBeUndefined();
  expect(report.rows).toBe(3);

  const stored = await repository.find({ where: ids.map((id) => ({ id })), order: { id: 'ASC' } });
  expect(stored.map(({ maybeCount, sureCount }) => [maybeCount, sureCount])).toEqual([
    [2, 10],
    [10, 20],
    [4, 30],
  ]);
}
