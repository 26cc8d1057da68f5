// Reads through a worker (`CounterService.getMany` and `get`), keyed like `readTargets`, so that what an
// instance serves can be compared with what the database holds and with what was acknowledged.
import type { CountedEntityName } from '../worker/worker-protocol.js';
import type { ChaosWorker } from './chaos-worker.js';
import { targetKey, type CounterTarget } from './counter-targets.js';

/** One `getMany` per entity for all the targets; a row the worker does not return is an error. */
export async function readThrough(worker: ChaosWorker, targets: CounterTarget[]): Promise<Map<string, number>> {
  const values = new Map<string, number>();
  const entities = [...new Set(targets.map((target) => target.entity))];
  for (const entity of entities) {
    const wanted = targets.filter((target) => target.entity === entity);
    const ids = [...new Set(wanted.map((target) => target.id))];
    const counters = [...new Set(wanted.map((target) => target.counter))];
    const rows = new Map(
      await worker.request<Array<[string | number, Record<string, number>]>>({ op: 'getMany', entity, ids, counters }),
    );
    for (const target of wanted) {
      const value = rows.get(target.id)?.[target.counter];
      if (value === undefined) throw new Error(`${worker.name} returned no value for ${targetKey(target)}`);
      values.set(targetKey(target), value);
    }
  }
  return values;
}

/** `CounterService.get` of one target through a worker. */
export function getThrough(worker: ChaosWorker, target: CounterTarget): Promise<number> {
  return worker.request<number>({
    op: 'get',
    entity: target.entity as CountedEntityName,
    rowId: target.id,
    counter: target.counter,
  });
}

/** Target keys whose values differ between two reads, as `key: a ≠ b` (at most `limit`). */
export function differences(a: Map<string, number>, b: Map<string, number>, limit = 10): string[] {
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  return keys
    .filter((key) => a.get(key) !== b.get(key))
    .slice(0, limit)
    .map((key) => `${key}: ${a.get(key)} ≠ ${b.get(key)}`);
}
