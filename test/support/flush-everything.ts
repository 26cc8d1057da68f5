import { expect } from 'vitest';
import type { CounterService } from '../../lib/index.js';

/**
 * Flushes until nothing waits in Redis. The app's scheduled flush (every second) may hold some shards'
 * leases when a call comes, and that call then skips them.
 */
export async function flushEverything(counters: CounterService): Promise<void> {
  for (let call = 0; call < 50; call++) {
    const report = await counters.flush();
    expect(report.error).toBeUndefined();
    if ((await counters.status()).pendingRows === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('rows still pending after 50 flushes');
}
