// How a worker's scheduled flush backs off while the database is down, seen from outside in two ways:
// - its log: each failed scheduled flush logs "Counter flush failed (attempt N) … retried in D ms",
//   the delay it drew (lib/flush/outage.log.ts; at debug level when an outage explains the failure);
// - its status(): polled, it shows when each failure happened (lastFailedFlushAt) and its number in the
//   row (consecutiveFailedFlushes), and whether the last success moved.
import type { CounterStatus } from '../../lib/index.js';
import { MESSAGES } from '../../lib/counter.messages.js';
import type { ChaosWorker } from './chaos-worker.js';
import { sleep } from './time.js';

export interface LoggedRetry {
  attempt: number;
  delayMs: number;
}

/** The message with its two numbers as capture groups, built from the library's own text. */
const RETRY_LINE = new RegExp(
  MESSAGES.flushFailed(111_111, 222_222)
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace('111111', '(\\d+)')
    .replace('222222', '(\\d+)'),
  'g',
);

/** Every "flush failed, retried in" line the worker printed, in order. */
export function loggedRetries(output: string): LoggedRetry[] {
  return [...output.matchAll(RETRY_LINE)].map((match) => ({ attempt: Number(match[1]), delayMs: Number(match[2]) }));
}

/** The scheduler's ceiling for the delay after the n-th failure in a row: the delay is drawn in [c/2, c]. */
export const backoffCeiling = (failures: number, intervalMs: number, maxBackoffMs: number) =>
  Math.min(maxBackoffMs, intervalMs * 2 ** failures);

export interface StatusSample {
  /** Epoch ms when the reply came. */
  at: number;
  status: CounterStatus;
}

/** Polls a worker's status() until stopped; keeps every sample. */
export class StatusWatcher {
  readonly samples: StatusSample[] = [];
  private running = false;
  private loop?: Promise<void>;

  constructor(
    readonly worker: ChaosWorker,
    private readonly intervalMs = 25,
  ) {}

  start(): this {
    this.running = true;
    this.loop = (async () => {
      while (this.running && this.worker.alive) {
        // A worker killed under the watcher (a failed test's teardown) ends the watch, quietly.
        const status = await this.worker.status().catch(() => undefined);
        if (status) this.samples.push({ at: Date.now(), status });
        await sleep(this.intervalMs);
      }
    })();
    return this;
  }

  async stop(): Promise<StatusSample[]> {
    this.running = false;
    await this.loop;
    return this.samples;
  }

  /** When each failure in a row was recorded, by its number in the row (as first seen), in samples before `until`. */
  failures(until = Infinity): Map<number, number> {
    const seen = new Map<number, number>();
    for (const { at, status } of this.samples) {
      if (at >= until) break;
      const { consecutiveFailedFlushes: n, lastFailedFlushAt } = status;
      if (n > 0 && lastFailedFlushAt && !seen.has(n)) seen.set(n, lastFailedFlushAt.getTime());
    }
    return seen;
  }
}

/**
 * Ms from `since` to the worker's first scheduled flush that succeeded after it (its failure streak
 * ended), or null if none within `timeoutMs`.
 */
export async function flushingAgain(worker: ChaosWorker, since: number, timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const status = await worker.status();
    const at = status.lastSuccessfulFlushAt?.getTime() ?? 0;
    if (at > since && status.consecutiveFailedFlushes === 0) return at - since;
    await sleep(25);
  }
  return null;
}

/** `flushingAgain` of every worker, at once. */
export function recoveries(workers: ChaosWorker[], since: number, timeoutMs: number): Promise<Array<number | null>> {
  return Promise.all(workers.map((worker) => flushingAgain(worker, since, timeoutMs)));
}
