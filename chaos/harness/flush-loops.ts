// Each instance flushing again and again, as the scheduled flush would, but driven by the parent so
// that every FlushReport comes back to it (batches applied, errors). A loop ends when its worker dies.
// `pause()` waits for the flushes in flight to finish: the parent can then read the ledger knowing that
// no instance is between a COMMIT and its report.
import { WorkerExitedError, type ChaosWorker } from './chaos-worker.js';
import type { WireFlushReport } from '../worker/worker-protocol.js';
import { sleep } from './time.js';

class FlushLoop {
  private paused = false;
  private current?: Promise<unknown>;
  private loop?: Promise<void>;
  private running = true;

  constructor(
    readonly worker: ChaosWorker,
    private readonly reports: WireFlushReport[],
    private readonly pauseMs: number,
  ) {
    this.loop = this.run();
  }

  async pause(): Promise<void> {
    this.paused = true;
    await this.current;
  }

  resume(): void {
    this.paused = false;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running && this.worker.alive) {
      if (!this.paused) {
        const flush = this.worker.flush();
        this.current = flush.catch(() => undefined);
        try {
          this.reports.push(await flush);
        } catch (error) {
          if (!(error instanceof WorkerExitedError)) throw error;
          return;
        }
      }
      await sleep(this.pauseMs);
    }
  }
}

export class FlushLoops {
  /** Every report received, from every loop, in arrival order. */
  readonly reports: WireFlushReport[] = [];
  private readonly loops: FlushLoop[] = [];

  constructor(private readonly pauseMs = 50) {}

  /** Starts flushing through `worker` (again, for a restarted instance). */
  add(worker: ChaosWorker): void {
    this.loops.push(new FlushLoop(worker, this.reports, this.pauseMs));
  }

  /** Stops starting flushes (through every worker, or only `worker`) and waits for those in flight. */
  async pause(worker?: ChaosWorker): Promise<void> {
    await Promise.all(this.select(worker).map((loop) => loop.pause()));
  }

  resume(worker?: ChaosWorker): void {
    for (const loop of this.select(worker)) loop.resume();
  }

  /** Ends every loop once its flush in flight has answered (or its worker died). */
  async stop(): Promise<WireFlushReport[]> {
    await Promise.all(this.loops.map((loop) => loop.stop()));
    return this.reports;
  }

  private select(worker?: ChaosWorker): FlushLoop[] {
    return this.loops.filter((loop) => loop.worker.alive && (!worker || loop.worker === worker));
  }
}
