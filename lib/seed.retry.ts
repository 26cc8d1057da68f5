import { SEED_BACKOFF_MAX_MS, SEED_CONTENTION_TIMEOUT_MS } from './counter.constants.js';

/**
 * The retries of one load of rows that flushes keep contending: each after a short random wait that
 * grows, so that the load falls out of step with the flushes of its shard, for SEED_CONTENTION_TIMEOUT_MS
 * from the first attempt. A count would run out in milliseconds on a shard that flushes without pause.
 */
export class SeedRetry {
  private readonly deadline = Date.now() + SEED_CONTENTION_TIMEOUT_MS;
  private retries = 0;

  /** Waits before the next attempt; false, at once, when the time is up. */
  async next(): Promise<boolean> {
    if (Date.now() >= this.deadline) return false;
    const ceiling = Math.min(SEED_BACKOFF_MAX_MS, 2 ** this.retries++);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
    return true;
  }
}
