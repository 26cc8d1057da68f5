import { MAX_CHANGES_PER_CALL, MAX_SAFE_COUNT } from '../counter.constants.js';
import { chunks, groupBy } from '../collections.js';
import type { ShardKeys } from './keys.js';
import { isCluster } from './redis-connection.js';
import type { Arg, CallTarget } from './script-commands.js';
import { toStoreError, type ScriptRunner } from './script-runner.js';
import { TickQueue, type Queued } from './tick-queue.js';

export interface IncrementRequest {
  shard: ShardKeys;
  encodedId: string;
  counter: string;
  delta: number;
  min: number;
  max: number;
}

export type IncrementOutcome =
  | { kind: 'applied'; value: number }
  | { kind: 'unseeded'; generation: string }
  | { kind: 'out-of-range'; current: number };

/**
 * Sends counter changes to Redis. The changes requested in one turn of the event loop go together, in
 * one script call per slot (one in all on a single Redis): still one round trip each, and a call's fixed
 * cost shared by every change in it.
 */
export class IncrementSender {
  private readonly queue: TickQueue<IncrementRequest, IncrementOutcome>;

  /** @param rowTtlSeconds how long a row stays cached after its first change since a claim. */
  constructor(
    private readonly runner: ScriptRunner,
    private readonly rowTtlSeconds: number,
  ) {
    // A single Redis takes one call's worth per turn (see TickQueue), with at most ten calls' worth
    // waiting. On a cluster a turn's changes split into calls per slot that several masters run at
    // once: all of them go (scale-out bench, quick run: 51,123 increments/s, against 29,321/s with one
    // call's worth per turn).
    const perTurn = isCluster(runner.client) ? Number.POSITIVE_INFINITY : MAX_CHANGES_PER_CALL;
    this.queue = new TickQueue(perTurn, 10 * MAX_CHANGES_PER_CALL, (queued) => this.send(queued));
  }

  increment(request: IncrementRequest): Promise<IncrementOutcome> {
    if (!this.runner.sendable) return Promise.reject(this.runner.notSendable());
    return this.queue.add(request);
  }

  /**
   * Sends changes queued together (at most MAX_CHANGES_PER_CALL): one script call per slot, a row's
   * changes next to each other. A failed call fails only its own changes.
   */
  private async send(queued: Queued<IncrementRequest, IncrementOutcome>[]): Promise<void> {
    const { runner } = this;
    if (!runner.sendable) {
      const error = runner.notSendable();
      for (const { reject } of queued) reject(error);
      return;
    }
    // A lone change (the common case at low load) goes straight to the client: no grouping, no
    // pipeline, and the fewest promises between the reply and the caller.
    if (queued.length === 1) {
      (this.sendOne(runner.client, queued[0].request) as Promise<unknown>).then(
        (reply) => settleChanges(queued, null, reply),
        (error: Error) => settleChanges(queued, error, undefined),
      );
      return;
    }
    const requests = queued.map(({ request }) => request);
    const rowOf = (index: number) => requests[index].shard.row(requests[index].encodedId);
    // A row's changes side by side: the script reads each row once and answers in this order.
    const calls = runner
      .callsBySlot(requests)
      .flatMap((indexes) => chunks([...groupBy(indexes, rowOf).values()].flat(), MAX_CHANGES_PER_CALL));
    const settled = await runner.sendPerNode(requests, calls, (target, indexes) =>
      this.sendMany(target, requests, indexes),
    );
    calls.forEach((indexes, call) =>
      settleChanges(
        indexes.map((index) => queued[index]),
        ...settled[call],
      ),
    );
  }

  /** One change, in the one-change script. */
  private sendOne(target: CallTarget, { shard, encodedId, counter, delta, min, max }: IncrementRequest): unknown {
    const row = shard.row(encodedId);
    // A counter without bounds of its own sends none (see INCREMENT_ONE_LUA).
    if (min === -MAX_SAFE_COUNT && max === MAX_SAFE_COUNT) {
      return target.nestjsCounterIncrement(row, encodedId, counter, delta, this.rowTtlSeconds);
    }
    return target.nestjsCounterIncrement(row, encodedId, counter, delta, this.rowTtlSeconds, bound(min), bound(max));
  }

  /** The changes `indexes` of `requests` (of one slot, a row's side by side) in one script call. */
  private sendMany(target: CallTarget, requests: IncrementRequest[], indexes: number[]): unknown {
    if (indexes.length === 1) return this.sendOne(target, requests[indexes[0]]);
    const keys: string[] = [];
    const args: Arg[] = [this.rowTtlSeconds];
    for (let first = 0; first < indexes.length;) {
      let end = first + 1;
      while (end < indexes.length && sameRow(requests[indexes[end]], requests[indexes[first]])) end++;
      const { shard, encodedId } = requests[indexes[first]];
      keys.push(shard.row(encodedId));
      args.push(encodedId, end - first);
      for (const index of indexes.slice(first, end)) {
        const { counter, delta, min, max } = requests[index];
        args.push(counter, delta, bound(min), bound(max));
      }
      first = end;
    }
    return target.nestjsCounterIncrementMany(keys.length, ...keys, ...args);
  }
}

/** A bound as the increment scripts take it: '' for the safe-integer limits (most counters declare none). */
function bound(value: number): Arg {
  return Math.abs(value) === MAX_SAFE_COUNT ? '' : value;
}

/**
 * Settles the changes one increment script call carried, in the order it carried them: from its reply
 * (two values per change, or the new value alone of the one change applied by INCREMENT_ONE_LUA), or
 * all refused with its error.
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
  return { kind: 'out-of-range', current: Number(value) };
}

/** CounterKeys builds one ShardKeys per entity and shard, so the same shard is the same object. */
function sameRow(a: IncrementRequest, b: IncrementRequest): boolean {
  return a.shard === b.shard && a.encodedId === b.encodedId;
}
