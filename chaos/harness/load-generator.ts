// Steady increments from concurrent callers, each to a random target through a random instance of the
// current set, recorded in an AcknowledgedDeltas. `useWorkers` changes the set while it runs (e.g. to
// take an instance out before a fault); `drain` and `stop` wait for the calls in flight, so that no
// request is left whose outcome is unknown. With `keyed`, each increment carries a key and is retried
// with it until it resolves.
import { seededRandom } from '../../support/seeded-random.js';
import { AcknowledgedDeltas } from './acknowledged-deltas.js';
import type { ChaosWorker } from './chaos-worker.js';
import type { CounterTarget } from './counter-targets.js';

export interface LoadOptions {
  targets: CounterTarget[];
  workers: ChaosWorker[];
  /** Concurrent callers. @default 8 */
  callers?: number;
  /** Each delta is 1..maxDelta. @default 3 */
  maxDelta?: number;
  /** Pause of each caller between two calls, in ms; 0 for as fast as possible. @default 2 */
  pauseMs?: number;
  /** Seed of the random choices (targets, instances, deltas). */
  seed?: number;
  /** Where to record; a new AcknowledgedDeltas by default. */
  tally?: AcknowledgedDeltas;
  /** Each increment carries an idempotency key and is retried with it until it resolves (G8). */
  keyed?: boolean;
}

export class LoadGenerator {
  readonly tally: AcknowledgedDeltas;
  private workers: ChaosWorker[];
  private running = false;
  private callers: Promise<void>[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly random: () => number;
  /** Numbers the keyed increments: each key is unique to one change of the run. */
  private sent = 0;

  constructor(private readonly options: LoadOptions) {
    this.tally = options.tally ?? new AcknowledgedDeltas();
    this.workers = [...options.workers];
    this.random = seededRandom(options.seed ?? 1);
  }

  start(): this {
    this.running = true;
    this.callers = Array.from({ length: this.options.callers ?? 8 }, () => this.caller());
    return this;
  }

  /** Sends the next calls to `workers` only; resolves once the calls already in flight have settled. */
  async useWorkers(workers: ChaosWorker[]): Promise<void> {
    this.workers = [...workers];
    await this.drain();
  }

  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  async stop(): Promise<AcknowledgedDeltas> {
    this.running = false;
    await Promise.all(this.callers);
    await this.drain();
    return this.tally;
  }

  private async caller(): Promise<void> {
    const { targets, maxDelta = 3, pauseMs = 2 } = this.options;
    while (this.running) {
      const workers = this.workers.filter((worker) => worker.alive);
      if (workers.length > 0) {
        const worker = workers[Math.floor(this.random() * workers.length)];
        const target = targets[Math.floor(this.random() * targets.length)];
        const by = 1 + Math.floor(this.random() * maxDelta);
        const call = this.options.keyed
          ? this.tally.incrementWithRetries(() => this.workers, target, by, `change-${this.sent++}`, this.random)
          : this.tally.increment(worker, target, by);
        this.inFlight.add(call);
        await call.finally(() => this.inFlight.delete(call));
      }
      await new Promise((resolve) => setTimeout(resolve, workers.length > 0 ? pauseMs : 20));
    }
  }
}
