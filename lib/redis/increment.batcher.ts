import { MAX_CHANGES_PER_CALL, MAX_SAFE_COUNT } from '../counter.constants.js';
import { chunks, groupBy } from '../collections.js';
import type { ShardKeys } from './counter.keys.js';
import { isCluster } from './counter-redis.handle.js';
import type { Arg, CallTarget } from './script-commands.js';
import { toStoreError, type ScriptRunner } from './script.runner.js';
import { TurnBatcher, type Queued } from './turn.batcher.js';

export interface IncrementRequest {
  shard: ShardKeys;
  encodedId: string;
  counter: string;
  delta: number;
  min: number;
  max: number;
  /** The change's idempotency key; undefined for a change without one. */
  idempotencyKey?: string;
}

export type IncrementOutcome =
  | { kind: 'applied'; value: number }
  | { kind: 'unseeded'; generation: string }
  | { kind: 'out-of-range'; current: number }
  | { kind: 'already-applied'; value: number };

/**
 * Sends counter changes to Redis, batched per turn of the event loop: the changes asked for in one turn
 * go together, in one increment script call per slot (one in all on a single Redis), so a call's fixed
 * cost is shared by every change in it and each caller still waits one round trip.
 */
export class IncrementBatcher {
  private readonly batcher: TurnBatcher<IncrementRequest, IncrementOutcome>;

  /**
   * @param rowTtlSeconds how long a row stays cached after its first change since a claim.
   * @param idempotencyTtlSeconds how long a keyed change's key is remembered.
   */
  constructor(
    private readonly runner: ScriptRunner,
    private readonly rowTtlSeconds: number,
    private readonly idempotencyTtlSeconds: number,
  ) {
    // A single Redis takes one call's worth per turn, so that it runs one call while this process reads
    // the replies of the last; a cluster runs the calls of several slots at once on several masters.
    const perTurn = isCluster(runner.client) ? Number.POSITIVE_INFINITY : MAX_CHANGES_PER_CALL;
    this.batcher = new TurnBatcher(perTurn, 10 * MAX_CHANGES_PER_CALL, (queued) => this.send(queued));
  }

  increment(request: IncrementRequest): Promise<IncrementOutcome> {
    if (!this.runner.sendable) return Promise.reject(this.runner.notSendable());
    return this.batcher.add(request);
  }

  /**
   * Sends changes gathered in one turn: one script call per slot, of at most MAX_CHANGES_PER_CALL
   * changes, a row's changes side by side. A failed call fails only its own changes.
   */
  private async send(queued: Queued<IncrementRequest, IncrementOutcome>[]): Promise<void> {
    const { runner } = this;
    if (!runner.sendable) {
      const error = runner.notSendable();
      for (const { reject } of queued) reject(error);
      return;
    }
    const requests = queued.map(({ request }) => request);
    // A lone change (the common case at low load) goes straight to the client, with no grouping.
    if (requests.length === 1) {
      (this.sendCall(runner.client, requests, [0]) as Promise<unknown>).then(
        (reply) => settleChanges(queued, null, reply),
        (error: Error) => settleChanges(queued, error, undefined),
      );
      return;
    }
    const rowOf = (index: number) => requests[index].shard.row(requests[index].encodedId);
    const calls = runner
      .callsBySlot(requests)
      .flatMap((indexes) => chunks([...groupBy(indexes, rowOf).values()].flat(), MAX_CHANGES_PER_CALL));
    const settled = await runner.sendPerNode(requests, calls, (target, indexes) =>
      this.sendCall(target, requests, indexes),
    );
    calls.forEach((indexes, call) =>
      settleChanges(
        indexes.map((index) => queued[index]),
        ...settled[call],
      ),
    );
  }

  /**
   * The changes `indexes` of `requests` (of one slot, a row's side by side) in one script call. A row
   * with a keyed change also declares its shard's idempotency record, and gives each change's key.
   */
  private sendCall(target: CallTarget, requests: IncrementRequest[], indexes: number[]): unknown {
    const keys: string[] = [];
    const args: Arg[] = [this.rowTtlSeconds];
    for (let first = 0; first < indexes.length;) {
      let end = first + 1;
      let keyed = requests[indexes[first]].idempotencyKey !== undefined;
      while (end < indexes.length && sameRow(requests[indexes[end]], requests[indexes[first]])) {
        keyed ||= requests[indexes[end]].idempotencyKey !== undefined;
        end++;
      }
      const { shard, encodedId } = requests[indexes[first]];
      keys.push(shard.row(encodedId), shard.pending, shard.dirty, shard.generation);
      if (keyed) {
        keys.push(shard.idempotency);
        args.push(encodedId, first - end, this.idempotencyTtlSeconds);
      } else args.push(encodedId, end - first);
      for (const index of indexes.slice(first, end)) {
        const { counter, delta, min, max, idempotencyKey } = requests[index];
        args.push(counter, delta, bound(min), bound(max));
        if (keyed) args.push(idempotencyKey ?? '');
      }
      first = end;
    }
    return target.nestjsCounterIncrement(keys.length, ...keys, ...args);
  }
}

/** A bound as the increment script takes it: '' for the safe-integer limits (most counters declare none). */
function bound(value: number): Arg {
  return Math.abs(value) === MAX_SAFE_COUNT ? '' : value;
}

/**
 * Settles the changes one script call carried, in order: from its reply (two values each, or the new
 * value alone of a call's one change, applied), or all with its error.
 */
function settleChanges(
  changes: Queued<IncrementRequest, IncrementOutcome>[],
  error: Error | null,
  reply: unknown,
): void {
  if (error) {
    const refused = toStoreError(error);
    for (const { reject } of changes) reject(refused);
    return;
  }
  if (!Array.isArray(reply)) {
    changes[0].resolve({ kind: 'applied', value: Number(reply) });
    return;
  }
  const flat = reply as Array<number | string>;
  changes.forEach(({ resolve }, i) => resolve(incrementOutcome(flat[2 * i], flat[2 * i + 1])));
}

function incrementOutcome(kind: number | string, value: number | string): IncrementOutcome {
  if (Number(kind) === 1) return { kind: 'applied', value: Number(value) };
  if (Number(kind) === 0) return { kind: 'unseeded', generation: String(value) };
  if (Number(kind) === 3) return { kind: 'already-applied', value: Number(value) };
  return { kind: 'out-of-range', current: Number(value) };
}

/** CounterKeys makes one ShardKeys per entity and shard, so the same shard is the same object. */
function sameRow(a: IncrementRequest, b: IncrementRequest): boolean {
  return a.shard === b.shard && a.encodedId === b.encodedId;
}
