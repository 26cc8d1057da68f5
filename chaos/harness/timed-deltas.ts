// AcknowledgedDeltas that also keeps, for every increment, when it was sent, when it settled and how it
// ended. Scenario 4 bounds the latency of an increment that failed; scenario 5 splits the acknowledged
// deltas around a Redis kill (what was sent before it could have been lost with it, nothing sent after).
// Pass one as `tally` to `startLoad`.
import { AcknowledgedDeltas, type IncrementOutcome } from './acknowledged-deltas.js';
import type { ChaosWorker } from './chaos-worker.js';
import { targetKey, type CounterTarget } from './counter-targets.js';

export interface TimedIncrement {
  target: CounterTarget;
  by: number;
  worker: string;
  outcome: IncrementOutcome;
  /** Epoch ms (this process's clock, which the workers share) when the request left and its reply came. */
  sentAt: number;
  settledAt: number;
  /** Round trip through the worker, in ms (monotonic clock). */
  latencyMs: number;
}

export class TimedDeltas extends AcknowledgedDeltas {
  readonly timeline: TimedIncrement[] = [];

  override async increment(worker: ChaosWorker, target: CounterTarget, by: number): Promise<IncrementOutcome> {
    const sentAt = Date.now();
    const started = performance.now();
    const outcome = await super.increment(worker, target, by);
    const latencyMs = performance.now() - started;
    this.timeline.push({ target, by, worker: worker.name, outcome, sentAt, settledAt: Date.now(), latencyMs });
    return outcome;
  }

  /** The increments that match `where`. */
  select(where: (increment: TimedIncrement) => boolean): TimedIncrement[] {
    return this.timeline.filter(where);
  }

  /**
   * The increments that were not acknowledged, for an assertion's message: when each was sent (relative
   * to `origin`), through which worker, to which target, and what the errors said.
   */
  describeFailures(origin: number, limit = 10): string {
    const failed = this.select(({ outcome }) => outcome !== 'acknowledged').slice(0, limit);
    const said = [...this.errors].map(([name, count]) => `${name}×${count}: ${this.firstMessages.get(name)}`);
    const when = failed.map(
      ({ sentAt, worker, target, outcome }) =>
        `${outcome} at ${sentAt - origin} ms via ${worker} (${targetKey(target)})`,
    );
    return [...said, ...when].join('; ');
  }

  /** Sum of the deltas of `increments`, per target key. */
  static byTarget(increments: TimedIncrement[]): Map<string, number> {
    const sums = new Map<string, number>();
    for (const { target, by } of increments) sums.set(targetKey(target), (sums.get(targetKey(target)) ?? 0) + by);
    return sums;
  }
}

/** The largest value, or 0 for none. */
export const worst = (values: number[]) => values.reduce((max, value) => Math.max(max, value), 0);
