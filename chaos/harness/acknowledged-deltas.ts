// What the instances acknowledged: per target, the sum of the increments a worker replied to with a
// value (G1's "acknowledged deltas"). An increment that failed is not acknowledged; when its outcome is
// unknown (the worker died before replying, or Redis timed out after the command was sent) its delta is
// kept apart as "uncertain": the database may or may not hold it, and the checker allows for it.
// Deltas are positive only, so that a shortfall is a loss and a surplus a duplicate without ambiguity.
// A keyed increment (G8) is retried with its key, through any instance, until it resolves: it ends
// acknowledged, or uncertain only if it never resolved within its deadline.
import { targetKey, type CounterTarget } from './counter-targets.js';
import { WorkerExitedError, WorkerRequestError, type ChaosWorker } from './chaos-worker.js';

export type IncrementOutcome = 'acknowledged' | 'refused' | 'uncertain';

/** Errors with which the library refuses a change before sending anything. */
const REFUSED_BEFORE_SENDING = new Set([
  'CounterOutOfRangeError',
  'CounterRowNotFoundError',
  'CounterSeedContentionError',
  'InvalidCounterDeltaError',
  'InvalidCounterIdError',
  'UnknownCountedEntityError',
  'UnknownCounterError',
]);

export function outcomeOfFailure(error: unknown): Exclude<IncrementOutcome, 'acknowledged'> {
  if (error instanceof WorkerRequestError) {
    if (REFUSED_BEFORE_SENDING.has(error.wire.name)) return 'refused';
    // CounterStoreUnavailableError says which: "nothing was sent" or "may or may not have been applied".
    if (error.wire.name === 'CounterStoreUnavailableError' && error.wire.message.includes('nothing was sent'))
      return 'refused';
    return 'uncertain';
  }
  if (error instanceof WorkerExitedError) return 'uncertain';
  throw error;
}

/**
 * Runs `attempt` on a live instance of `workers()` picked by `random`, and again after each failure (a
 * short pause, then any live instance), until one attempt resolves or `deadlineMs` passes: how a keyed
 * change is retried with its key. `failed` is told of each failed attempt. Whether one resolved.
 */
export async function retryOnLiveWorkers(
  workers: () => ChaosWorker[],
  random: () => number,
  deadlineMs: number,
  attempt: (worker: ChaosWorker) => Promise<unknown>,
  failed: (error: unknown) => void,
): Promise<boolean> {
  const giveUpAt = Date.now() + deadlineMs;
  while (Date.now() < giveUpAt) {
    const live = workers().filter((worker) => worker.alive);
    if (live.length > 0) {
      try {
        await attempt(live[Math.floor(random() * live.length)]);
        return true;
      } catch (error) {
        failed(error);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

export class AcknowledgedDeltas {
  private readonly acknowledgedByTarget = new Map<string, number>();
  private readonly uncertainByTarget = new Map<string, number>();
  /** Number of increments per outcome. */
  readonly calls: Record<IncrementOutcome, number> = { acknowledged: 0, refused: 0, uncertain: 0 };
  /** Names of the errors met, with how often: shows what an instance said when it refused. */
  readonly errors = new Map<string, number>();
  /** The first message met per error name: what the instance said, in its words. */
  readonly firstMessages = new Map<string, string>();
  /** Attempts of keyed increments per outcome, the retried ones included. */
  readonly attempts: Record<IncrementOutcome, number> = { acknowledged: 0, refused: 0, uncertain: 0 };

  async increment(worker: ChaosWorker, target: CounterTarget, by: number): Promise<IncrementOutcome> {
    if (!Number.isSafeInteger(by) || by <= 0) throw new Error(`chaos load uses positive deltas only; got ${by}`);
    try {
      await worker.increment(target.entity, target.id, target.counter, by);
      this.add(this.acknowledgedByTarget, target, by);
      this.calls.acknowledged++;
      return 'acknowledged';
    } catch (error) {
      const outcome = outcomeOfFailure(error);
      this.noteError(error as Error);
      if (outcome === 'uncertain') this.add(this.uncertainByTarget, target, by);
      this.calls[outcome]++;
      return outcome;
    }
  }

  /**
   * Sends `by` with `idempotencyKey` through one of `workers()`, and again with the same key after each
   * failure (a short pause, then any live instance), until an attempt resolves or `deadlineMs` passes.
   */
  async incrementWithRetries(
    workers: () => ChaosWorker[],
    target: CounterTarget,
    by: number,
    idempotencyKey: string,
    random: () => number,
    deadlineMs = 60_000,
  ): Promise<IncrementOutcome> {
    if (!Number.isSafeInteger(by) || by <= 0) throw new Error(`chaos load uses positive deltas only; got ${by}`);
    const resolved = await retryOnLiveWorkers(
      workers,
      random,
      deadlineMs,
      (worker) => worker.increment(target.entity, target.id, target.counter, by, idempotencyKey),
      (error) => {
        this.attempts[outcomeOfFailure(error)]++;
        this.noteError(error as Error);
      },
    );
    if (resolved) {
      this.attempts.acknowledged++;
      this.add(this.acknowledgedByTarget, target, by);
      this.calls.acknowledged++;
      return 'acknowledged';
    }
    this.add(this.uncertainByTarget, target, by);
    this.calls.uncertain++;
    return 'uncertain';
  }

  acknowledged(target: CounterTarget): number {
    return this.acknowledgedByTarget.get(targetKey(target)) ?? 0;
  }

  uncertain(target: CounterTarget): number {
    return this.uncertainByTarget.get(targetKey(target)) ?? 0;
  }

  get totalAcknowledged(): number {
    return sum(this.acknowledgedByTarget);
  }

  get totalUncertain(): number {
    return sum(this.uncertainByTarget);
  }

  private noteError({ name, message }: Error): void {
    this.errors.set(name, (this.errors.get(name) ?? 0) + 1);
    if (!this.firstMessages.has(name)) this.firstMessages.set(name, message);
  }

  private add(into: Map<string, number>, target: CounterTarget, by: number): void {
    const key = targetKey(target);
    into.set(key, (into.get(key) ?? 0) + by);
  }
}

const sum = (values: Map<string, number>) => [...values.values()].reduce((total, value) => total + value, 0);
