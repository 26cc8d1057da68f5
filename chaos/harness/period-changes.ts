// Changes to one counter of many rows, each recorded with the period it was made in (scenario 17: one
// hour of Redis's clock), so that the hour and day buckets it must land in are known. Deltas are signed
// (increments and decrements): unlike AcknowledgedDeltas, a row's net change no longer tells a loss from a
// duplicate, so a scenario using this one makes every change resolve (keyed retries, instances that are
// never killed) and compares each bucket exactly. An unkeyed change goes to one instance, again while it
// is refused; a keyed one is sent again with its key, through any live instance, after each failed
// attempt until one resolves.
import { outcomeOfFailure, retryOnLiveWorkers, type IncrementOutcome } from './acknowledged-deltas.js';
import type { ChaosWorker } from './chaos-worker.js';
import type { CountedEntityName } from '../worker/worker-protocol.js';

export class PeriodChanges {
  /** Per row id, the net acknowledged change of each period. */
  private readonly acknowledgedByRow = new Map<number, number[]>();
  /** Changes per outcome. */
  readonly calls: Record<IncrementOutcome, number> = { acknowledged: 0, refused: 0, uncertain: 0 };
  /** Attempts per outcome, the retried ones included. */
  readonly attempts: Record<IncrementOutcome, number> = { acknowledged: 0, refused: 0, uncertain: 0 };
  /** Sum of the magnitudes of the changes whose outcome stayed unknown. */
  uncertain = 0;
  keyedChanges = 0;
  /** Names of the errors met, with how often. */
  readonly errors = new Map<string, number>();
  /** The first message met per error name: what the instance said, in its words. */
  readonly firstMessages = new Map<string, string>();

  constructor(
    private readonly entity: CountedEntityName,
    private readonly counter: string,
    private readonly periods: number,
  ) {}

  /**
   * Sends `delta` to `rowId` through `worker`, and again after each refusal (nothing was applied: the
   * library asks for a retry, e.g. CounterSeedContentionError), until it is acknowledged or its outcome is
   * unknown.
   */
  async change(worker: ChaosWorker, rowId: number, delta: number, period: number): Promise<IncrementOutcome> {
    for (;;) {
      try {
        await worker.increment(this.entity, rowId, this.counter, delta);
        this.attempts.acknowledged++;
        this.acknowledge(rowId, delta, period);
        return 'acknowledged';
      } catch (error) {
        const outcome = outcomeOfFailure(error);
        this.attempts[outcome]++;
        this.noteError(error as Error);
        if (outcome === 'uncertain') {
          this.uncertain += Math.abs(delta);
          this.calls.uncertain++;
          return outcome;
        }
      }
      await pause();
    }
  }

  /**
   * Sends `delta` with `idempotencyKey` through one of the live `workers()`, and again with the same key
   * after each failure, refused or uncertain, until an attempt resolves or `deadlineMs` passes.
   */
  async changeWithRetries(
    workers: () => ChaosWorker[],
    rowId: number,
    delta: number,
    period: number,
    idempotencyKey: string,
    random: () => number,
    deadlineMs = 60_000,
  ): Promise<IncrementOutcome> {
    this.keyedChanges++;
    const resolved = await retryOnLiveWorkers(
      workers,
      random,
      deadlineMs,
      (worker) => worker.increment(this.entity, rowId, this.counter, delta, idempotencyKey),
      (error) => {
        this.attempts[outcomeOfFailure(error)]++;
        this.noteError(error as Error);
      },
    );
    if (resolved) {
      this.attempts.acknowledged++;
      this.acknowledge(rowId, delta, period);
      return 'acknowledged';
    }
    this.uncertain += Math.abs(delta);
    this.calls.uncertain++;
    return 'uncertain';
  }

  /** The net acknowledged change of `rowId` in `period`. */
  acknowledged(rowId: number, period: number): number {
    return this.acknowledgedByRow.get(rowId)?.[period] ?? 0;
  }

  /** The net acknowledged change of `rowId` over every period. */
  total(rowId: number): number {
    return (this.acknowledgedByRow.get(rowId) ?? []).reduce((sum, change) => sum + change, 0);
  }

  private acknowledge(rowId: number, delta: number, period: number): void {
    let byPeriod = this.acknowledgedByRow.get(rowId);
    if (!byPeriod) this.acknowledgedByRow.set(rowId, (byPeriod = new Array<number>(this.periods).fill(0)));
    byPeriod[period] += delta;
    this.calls.acknowledged++;
  }

  private noteError({ name, message }: Error): void {
    this.errors.set(name, (this.errors.get(name) ?? 0) + 1);
    if (!this.firstMessages.has(name)) this.firstMessages.set(name, message);
  }
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
