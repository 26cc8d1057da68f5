import { expect } from 'vitest';
import { CounterReplicationLagError, type FlushReport } from '../../lib/index.js';
import { articleCounts } from '../../support/rows.js';
import type { CounterApp } from './counter-app.js';

/**
 * A flush whose claim was not confirmed in time (a replica or an AOF behind): it reports `message`, writes
 * nothing, and leaves the batch claimed, so the article still has `likes` in SQL.
 */
export async function expectClaimLeftClaimed(
  app: CounterApp,
  report: FlushReport,
  message: string,
  id: number,
  likes: number,
): Promise<void> {
  expect(report.error).toBeInstanceOf(CounterReplicationLagError);
  expect(report.error?.message).toBe(message);
  expect(report).toMatchObject({ batches: 0, failedShards: 1 });
  expect(await articleCounts(app.dataSource, [id])).toEqual(new Map([[id, { likes, views: 0 }]]));
}

/** The next flush writes the batch left claimed (and `batches` in all), once: the article has `likes` in SQL. */
export async function expectWrittenByNextFlush(app: CounterApp, id: number, likes: number, batches = 1): Promise<void> {
  const later = await app.counters.flush();
  expect(later.error).toBeUndefined();
  expect(later).toMatchObject({ batches, recoveredBatches: 1 });
  expect(await articleCounts(app.dataSource, [id])).toEqual(new Map([[id, { likes, views: 0 }]]));
}
