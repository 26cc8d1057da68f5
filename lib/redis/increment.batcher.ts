import { MAX_CHANGES_PER_CALL, MAX_SAFE_COUNT } from '../counter.constants.js';
import { groupBy } from '../collections.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import type { CounterDurability } from '../interfaces/counter-module-options.interface.js';
import { AOF_WAIT_MS } from './aof.waiter.js';
import type { ShardKeys } from './counter.keys.js';
import { isCluster } from './counter-redis.handle.js';
import { REPLY, type Arg } from './script-commands.js';
import { scriptCall, type RedisCall, type ScriptRunner } from './script.runner.js';
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

/** What became of a change (increment.lua.ts), or of a set (set.lua.ts) that was not `changed`. */
export type ChangeOutcome =
  | { kind: 'applied'; value: number }
  | { kind: 'unseeded'; generation: string }
  | { kind: 'out-of-range'; current: number };

export type IncrementOutcome = ChangeOutcome | { kind: 'already-applied'; value: number };

type QueuedChange = Queued<IncrementRequest, IncrementOutcome>;

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
   * @param durability `'fsync'`: a change resolves once its master's AOF has it on disk.
   */
  constructor(
    private readonly runner: ScriptRunner,
    private readonly rowTtlSeconds: number,
    private readonly idempotencyTtlSeconds: number,
    private readonly durability: CounterDurability = 'none',
  ) {
    // A single Redis takes one call's worth per turn, so that it runs one call while this process reads
    // the replies of the last; a cluster runs the calls of several slots at once on several masters.
    const perTurn = isCluster(runner.client) ? Number.POSITIVE_INFINITY : MAX_CHANGES_PER_CALL;
    this.batcher = new TurnBatcher(perTurn, 10 * MAX_CHANGES_PER_CALL, (queued) => this.send(queued));
  }

  /** Changes one counter of one row (see increment.lua.ts), with the other changes of this turn. */
  increment(request: IncrementRequest): Promise<IncrementOutcome> {
    if (!this.runner.sendable) return Promise.reject(this.runner.notSendable());
    return this.batcher.add(request);
  }

  /**
   * Sends changes gathered in one turn: one script call per slot, of at most MAX_CHANGES_PER_CALL
   * changes, a row's changes side by side. A failed call fails only its own changes.
   */
  private async send(queued: QueuedChange[]): Promise<void> {
    const byRow = queued.length === 1 ? queued : [...groupBy(queued, rowOf).values()].flat();
    const calls = this.runner.groupsForCalls(byRow, slotOf, MAX_CHANGES_PER_CALL);
    const sentAt = performance.now();
    const outcomes = this.runner.sendNow(calls.map((changes) => this.call(changes)));
    await Promise.all(
      outcomes.map((outcome, call) =>
        (this.durability === 'fsync'
          ? outcome.then((results) => this.fsynced(calls[call], results, sentAt))
          : outcome
        ).then(
          (results) => calls[call].forEach(({ resolve }, i) => resolve(results[i])),
          (error: unknown) => calls[call].forEach(({ reject }) => reject(error)),
        ),
      ),
    );
  }

  /**
   * The call's results once its master has fsynced them to its AOF: the waits of a turn's calls on one
   * master are one `WAITAOF` (`AofWaiter`). Unconfirmed, the changes were applied but may be lost in a
   * crash: their outcome is unknown to the caller, who retries them with their keys.
   */
  private async fsynced(
    changes: QueuedChange[],
    results: IncrementOutcome[],
    sentAt: number,
  ): Promise<IncrementOutcome[]> {
    const { slot, aofMark } = changes[0].request.shard;
    let reason: string;
    try {
      const outcome = await this.runner.aof.persisted(slot, aofMark, 'master', sentAt);
      if (outcome === 'fsynced') return results;
      reason =
        outcome === 'late'
          ? `no fsync confirmed within ${AOF_WAIT_MS} ms`
          : 'the Redis master has no WAITAOF or no AOF';
    } catch (error) {
      reason = (error as Error).message;
    }
    throw new CounterStoreUnavailableError(MESSAGES.changeNotFsynced(reason), { outcomeUnknown: true });
  }

  /**
   * Changes of one slot, a row's side by side, in one script call. A row with a keyed change also
   * declares its shard's idempotency record, and gives each change's key.
   */
  private call(changes: QueuedChange[]): RedisCall<IncrementOutcome[]> {
    const keys: string[] = [];
    const args: Arg[] = [this.rowTtlSeconds];
    for (let first = 0; first < changes.length;) {
      const { shard, encodedId } = changes[first].request;
      let end = first + 1;
      let keyed = changes[first].request.idempotencyKey !== undefined;
      while (end < changes.length && sameRow(changes[end].request, changes[first].request)) {
        keyed ||= changes[end].request.idempotencyKey !== undefined;
        end++;
      }
      keys.push(shard.row(encodedId), shard.pending, shard.dirty, shard.generation);
      if (keyed) {
        keys.push(shard.idempotency);
        args.push(encodedId, first - end, this.idempotencyTtlSeconds);
      } else args.push(encodedId, end - first);
      for (const { request } of changes.slice(first, end)) {
        const { counter, delta, min, max, idempotencyKey } = request;
        args.push(counter, delta, bound(min), bound(max));
        if (keyed) args.push(idempotencyKey ?? '');
      }
      first = end;
    }
    return scriptCall('nestjsCounterIncrement', changes[0].request.shard.slot, keys, args, readOutcomes);
  }
}

/** A bound as the increment script takes it: '' for the safe-integer limits (most counters declare none). */
function bound(value: number): Arg {
  return Math.abs(value) === MAX_SAFE_COUNT ? '' : value;
}

/**
 * The outcomes of a call's changes, in order: two values each, or the new value alone of a call's one
 * change, applied.
 */
function readOutcomes(reply: unknown): IncrementOutcome[] {
  if (!Array.isArray(reply)) return [{ kind: 'applied', value: Number(reply) }];
  const flat = reply as Array<number | string>;
  const outcomes: IncrementOutcome[] = new Array(flat.length / 2);
  for (let i = 0; i < outcomes.length; i++) outcomes[i] = incrementOutcome(Number(flat[2 * i]), flat[2 * i + 1]);
  return outcomes;
}

function incrementOutcome(kind: number, value: number | string): IncrementOutcome {
  if (kind === REPLY.increment.applied) return { kind: 'applied', value: Number(value) };
  if (kind === REPLY.increment.unseeded) return { kind: 'unseeded', generation: String(value) };
  if (kind === REPLY.increment.alreadyApplied) return { kind: 'already-applied', value: Number(value) };
  return { kind: 'out-of-range', current: Number(value) };
}

function rowOf({ request }: QueuedChange): string {
  return request.shard.row(request.encodedId);
}

function slotOf({ request }: QueuedChange): number {
  return request.shard.slot;
}

/** CounterKeys makes one ShardKeys per entity and shard, so the same shard is the same object. */
function sameRow(a: IncrementRequest, b: IncrementRequest): boolean {
  return a.shard === b.shard && a.encodedId === b.encodedId;
}
