import { Inject, Injectable } from '@nestjs/common';
import { COUNTER_INSTRUMENTS, MAX_IDEMPOTENCY_KEY_LENGTH, SEED_ATTEMPTS } from './counter.constants.js';
import { MESSAGES } from './counter.messages.js';
import { CounterReader } from './counter.reader.js';
import { CounterRegistry, type CountedEntity, type CounterField } from './counter.registry.js';
import { CounterOutOfRangeError } from './exceptions/counter-out-of-range.error.js';
import { CounterRowNotFoundError } from './exceptions/counter-row-not-found.error.js';
import { CounterSeedContentionError } from './exceptions/counter-seed-contention.error.js';
import { InvalidCounterDeltaError } from './exceptions/invalid-counter-delta.error.js';
import { InvalidIdempotencyKeyError } from './exceptions/invalid-idempotency-key.error.js';
import type { CounterChangeOptions, CounterChangeOutcome } from './interfaces/counter-change.interface.js';
import type { EntityClass } from './interfaces/entity-class.interface.js';
import type { CounterInstruments } from './metrics/counter.instruments.js';
import { CounterKeys, type ShardKeys } from './redis/counter.keys.js';
import { CounterStore } from './redis/counter.store.js';
import { RefusedChanges } from './reconcile/refused-changes.js';
import type { IncrementOutcome, IncrementRequest } from './redis/increment.batcher.js';
import { toRowId, type RowId } from './row-id.js';

/**
 * Applies changes and sets of counters (CounterService's writes): validates and addresses them, sends
 * them to Redis, and loads a row Redis does not hold from the database before trying again.
 */
@Injectable()
export class CounterChangeApplier {
  constructor(
    private readonly registry: CounterRegistry,
    private readonly store: CounterStore,
    private readonly keys: CounterKeys,
    private readonly reader: CounterReader,
    @Inject(COUNTER_INSTRUMENTS) private readonly instruments: CounterInstruments,
    private readonly refused: RefusedChanges,
  ) {}

  /**
   * Adds `sign` × `by`; a row Redis does not hold yet is loaded from the database first. Resolves with
   * the value alone, or with `{ value, applied }` when `withOutcome`.
   */
  async apply(
    entity: EntityClass,
    id: string | number,
    counter: string,
    by: unknown,
    sign: 1 | -1,
    options: CounterChangeOptions | undefined,
    withOutcome: boolean,
  ): Promise<number | CounterChangeOutcome> {
    try {
      const change = this.prepareChange(entity, id, counter, by, sign, options);
      const { delta } = change.request;
      let outcome = await this.store.increment(change.request);
      if (outcome.kind !== 'applied' && outcome.kind !== 'already-applied') {
        outcome = await this.finishChange(
          change,
          outcome,
          () => this.store.increment(change.request),
          () => delta,
        );
      }
      const applied = outcome.kind === 'applied';
      if (applied) this.instruments.changed(change.counted, change.field);
      return withOutcome ? { value: outcome.value, applied } : outcome.value;
    } catch (error) {
      this.instruments.changeFailed(entity, counter, error);
      this.refused.remember(entity, id, counter, error);
      throw error;
    }
  }

  /** Sets a counter to `value`; resolves with the live value it replaced (see `CounterService.set`). */
  async set(entity: EntityClass, id: string | number, counter: string, value: number): Promise<number> {
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
      throw new InvalidCounterDeltaError(MESSAGES.invalidValue(value));
    }
    const row = this.address(entity, id, counter);
    const { field, shard, encodedId } = row;
    const request = { shard, encodedId, counter: field.name, value, min: field.min, max: field.max };
    // Without an expected value, a set never finds the row 'changed'.
    const attempt = () => this.store.set(request) as Promise<IncrementOutcome>;
    const outcome = await attempt();
    if (outcome.kind === 'applied') return outcome.value;
    return (await this.finishChange(row, outcome, attempt, (current) => value - current)).value;
  }

  /** Sets a counter to `value` only while its live value is `expected`: false when it moved (or expired). */
  async replace(counted: CountedEntity, field: CounterField, id: string | number, expected: number, value: number) {
    const { shard, encodedId } = this.address(counted.target, id, field.name);
    const { min, max } = field;
    const outcome = await this.store.set({ shard, encodedId, counter: field.name, value, min, max, expected });
    if (outcome.kind === 'out-of-range') throw outOfRange(counted, field, outcome.current, value - outcome.current);
    return outcome.kind === 'applied';
  }

  /**
   * Validates a change and addresses it. Throws the errors of invalid deltas and idempotency keys,
   * unknown names and invalid ids.
   */
  private prepareChange(
    entity: EntityClass,
    id: string | number,
    counter: string,
    by: unknown,
    sign: 1 | -1,
    options: CounterChangeOptions | undefined,
  ): PreparedChange {
    if (typeof by !== 'number' || !Number.isSafeInteger(by))
      throw new InvalidCounterDeltaError(MESSAGES.invalidDelta(by));
    const idempotencyKey = idempotencyKeyOf(options);
    const delta = by === 0 ? 0 : sign * by;
    const row = this.address(entity, id, counter);
    const { field, shard, encodedId } = row;
    const { min, max } = field;
    return { ...row, request: { shard, encodedId, counter: field.name, delta, min, max, idempotencyKey } };
  }

  /** A counter of a row: its entity, field, id and keys. Throws the errors of unknown names and invalid ids. */
  private address(entity: EntityClass, id: unknown, counter: string): AddressedCounter {
    const counted = this.registry.get(entity);
    const field = this.registry.counter(counted, counter);
    const rowId = toRowId(counted, id);
    const encodedId = this.keys.encodeId(rowId.text);
    return { counted, field, rowId, encodedId, shard: this.keys.shard(counted.key, this.keys.shardOf(encodedId)) };
  }

  /**
   * What an attempt that was not applied leads to: an out-of-range error, or loading the row from the
   * database and trying again, SEED_ATTEMPTS attempts in all.
   */
  private async finishChange(
    { counted, field, rowId }: AddressedCounter,
    first: IncrementOutcome,
    retry: () => Promise<IncrementOutcome>,
    deltaFrom: (current: number) => number,
  ): Promise<AppliedOutcome> {
    let outcome = first;
    for (let attempt = 1; ; attempt++) {
      if (outcome.kind === 'applied' || outcome.kind === 'already-applied') return outcome;
      if (outcome.kind === 'out-of-range') {
        throw outOfRange(counted, field, outcome.current, deltaFrom(outcome.current));
      }
      if (attempt === SEED_ATTEMPTS) break;
      const seeded = await this.reader.ensureSeeded({ entity: counted, id: rowId });
      if (!seeded) throw new CounterRowNotFoundError(MESSAGES.rowNotFound(counted.name, rowId.text));
      outcome = await retry();
    }
    throw new CounterSeedContentionError(MESSAGES.seedContended(counted.name, rowId.text));
  }
}

/** A counter of a row, validated and addressed: what its errors name, and where it lives. */
interface AddressedCounter {
  counted: CountedEntity;
  field: CounterField;
  rowId: RowId;
  encodedId: string;
  shard: ShardKeys;
}

/** A change, validated and addressed: what each attempt sends. */
interface PreparedChange extends AddressedCounter {
  request: IncrementRequest;
}

type AppliedOutcome = Extract<IncrementOutcome, { kind: 'applied' | 'already-applied' }>;

/** The change's idempotency key, undefined when it has none; refuses one that is not a short string. */
function idempotencyKeyOf(options: CounterChangeOptions | undefined): string | undefined {
  const key: unknown = options?.idempotencyKey;
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    throw new InvalidIdempotencyKeyError(MESSAGES.invalidIdempotencyKey(key, MAX_IDEMPOTENCY_KEY_LENGTH));
  return key;
}

function outOfRange(entity: CountedEntity, field: CounterField, current: number, delta: number) {
  return new CounterOutOfRangeError(MESSAGES.outOfRange(entity.name, field.name, current, delta, field.min, field.max));
}
