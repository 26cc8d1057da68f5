import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { CounterFlushScheduler } from '../../lib/flush/counter-flush.scheduler.js';
import { FlushHistory } from '../../lib/flush/flush.history.js';
import type { CounterApp } from './counter-app.js';

/**
 * One scheduled flush, as the timer runs it: resolves once it ended (failed or not) and its backoff passed
 * (the app's flushMaxBackoffMs should be a few ms).
 */
export async function scheduledFlush(app: CounterApp): Promise<void> {
  const history = app.app.get(FlushHistory);
  const [failures, succeeded] = [history.consecutiveFailedFlushes, history.lastSuccessfulFlushAt];
  app.app.get(CounterFlushScheduler).tick();
  await expect
    .poll(() => history.consecutiveFailedFlushes !== failures || history.lastSuccessfulFlushAt !== succeeded, {
      timeout: 10_000,
      interval: 5,
    })
    .toBe(true);
  // Past the backoff the failure drew (at most flushMaxBackoffMs), and the run's end.
  await sleep(10);
}
