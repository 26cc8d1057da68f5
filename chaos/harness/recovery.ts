// Whether an instance recovers by itself once Redis is back: it is asked to count, as a user's request
// would, until it acknowledges one. The probes go through the scenario's tally, so they are counted like
// any other increment (acknowledged, refused or uncertain).
import type { AcknowledgedDeltas } from './acknowledged-deltas.js';
import type { ChaosWorker } from './chaos-worker.js';
import type { CounterTarget } from './counter-targets.js';
import { sleep } from './time.js';

/** Ms from `since` to the worker's first acknowledged probe, or null if none within `timeoutMs`. */
export async function countingAgain(
  tally: AcknowledgedDeltas,
  worker: ChaosWorker,
  target: CounterTarget,
  since: number,
  timeoutMs: number,
): Promise<number | null> {
  const deadline = since + timeoutMs;
  while (Date.now() < deadline) {
    if ((await tally.increment(worker, target, 1)) === 'acknowledged') return Date.now() - since;
    await sleep(20);
  }
  return null;
}
