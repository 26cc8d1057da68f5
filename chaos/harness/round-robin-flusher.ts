// The deployment's flushes driven by the parent, one at a time, through each instance in turn. One at a
// time, no shard is ever skipped for another flusher's lease, so a flush that ended without error
// wrote every delta acknowledged before it started: scenario 5 bounds what a Redis kill can lose from
// the last such flush. In turn, every instance keeps seeing the shards' generations, which is how each
// one notices a loss of Redis data (CounterFlusher).
import type { WireFlushReport } from '../worker/worker-protocol.js';
import type { ChaosWorker } from './chaos-worker.js';
import { sleep } from './time.js';

export class RoundRobinFlusher {
  readonly reports: WireFlushReport[] = [];
  private running = false;
  private paused = false;
  private loop?: Promise<void>;
  /** The flush in flight, settled either way. */
  private current: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly workers: ChaosWorker[],
    private readonly pauseMs = 100,
  ) {}

  start(): this {
    this.running = true;
    this.loop = this.run();
    return this;
  }

  /** Starts no more flushes; resolves once the one in flight has answered. */
  async pause(): Promise<void> {
    this.paused = true;
    await this.current;
  }

  resume(): void {
    this.paused = false;
  }

  async stop(): Promise<WireFlushReport[]> {
    this.running = false;
    await this.loop;
    return this.reports;
  }

  /** The last flush that ended before `at` having written everything it found (no error, no shard skipped). */
  lastCompleteBefore(at: number): WireFlushReport | undefined {
    return this.reports.filter((report) => report.endedAt < at && !report.error && report.busyShards === 0).at(-1);
  }

  private async run(): Promise<void> {
    for (let turn = 0; this.running; turn++) {
      const worker = this.workers[turn % this.workers.length];
      if (!this.paused && worker.alive) {
        const flush = worker.flush();
        this.current = flush.catch(() => undefined);
        try {
          this.reports.push(await flush);
        } catch {
          // Its worker was killed (a failed test's teardown): nothing left to drive.
          return;
        }
      }
      await sleep(this.pauseMs);
    }
  }
}
