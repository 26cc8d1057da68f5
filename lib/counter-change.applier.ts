import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { COUNTER_INSTRUMENTS, MAX_IDEMPOTENCY_KEY_LENGTH } from './counter.constants.js';
import { MESSAGES } from './counter.messages.js';
import { CounterReader } from './counter.reader.js';
import { CounterRegistry } from './counter.registry.js';
import type { CountedEntity, CounterField } from './model/counted-entity.js';
import { groupBy } from './collections.js';
import { CounterOutOfRangeError } from './exceptions/counter-out-of-range.error.js';
import { CounterRowNotFoundError } from './exceptions/counter-row-not-found.error.js';
import { CounterSeedContentionError } from './exceptions/counter-seed-contention.error.js';
import { InvalidCounterDeltaError } from './exceptions/invalid-counter-delta.error.js';
import { InvalidIdempotencyKeyError } from './exceptions/invalid-idempotency-key.error.js';
import type { CounterChangeOptions, CounterChangeOutcome } from './interfaces/counter-change.interface.js';
import type { EntityClass } from './interfaces/entity-class.interface.js';
import type { CounterInstruments } from './metrics/counter.instruments.js';
import { CounterKeys, type ShardKeys } from './redis/counter.keys.js';
import { CounterStore, type VersionedValue } from './redis/counter.store.js';
import { RefusedChanges } from './reconcile/refused-changes.js';
import { OutageLog } from './flush/outage.log.js';
import { IncrementBatcher, type IncrementOutcome, type IncrementRequest } from './redis/increment.batcher.js';
import { toRowId, type RowId } from './model/row-id.js';
import { SeedRetry } from './seed.retry.js';
import { loneSurrogateAt } from './well-formed-text.js';

/**
 * Applies changes and sets of counters (CounterService's writes): validates and addresses them, sends
 * them to Redis, and loads a row Redis does not hold from the database before trying again.
 */
@Injectable()
export class CounterChangeApplier {
  constructor(
    private readonly registry: CounterRegistry,
    private readonly store: CounterStore,
    private readonly increments: IncrementBatcher,
    private readonly keys: CounterKeys,
    private readonly reader: CounterReader,
    @Inject(COUNTER_INSTRUMENTS) private readonly instruments: CounterInstruments,
    private readonly refused: RefusedChanges,
    private readonly outages: OutageLog,
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
      let outcome = await this.increments.increment(change.request);
      if (outcome.kind !== 'applied' && outcome.kind !== 'already-applied') {
        outcome = await this.finishChange(
          change,
          outcome,
          () => this.increments.increment(change.request),
          () => delta,
        );
      }
      const applied = outcome.kind === 'applied';
      if (applied) this.instruments.changed(change.counted, change.field);
      this.outages.changeAnswered(applied);
      return withOutcome ? { value: outcome.value, applied } : outcome.value;
    } catch (error) {
      // Only the registry's names label metrics: a caller's names would make a series each.
      const counted = this.registry.find(entity);
      this.instruments.changeFailed(counted, counted && this.registry.findCounter(counted, counter), error);
      this.refused.remember(entity, id, counter, error);
      this.outages.changeFailed(error);
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
    const request = {
      shard,
      encodedId,
      counter: field.name,
      value,
      min: field.min,
      max: field.max,
      version: newVersion(),
    };
    // Without an expected value, a set never finds the row 'changed'.
    const attempt = () => this.store.set(request);
    const outcome = await attempt();
    const { value: replaced } =
      outcome.kind === 'applied'
        ? outcome
        : await this.finishChange(row, outcome, attempt, (current) => value - current);
    this.outages.changeAnswered(true);
    return replaced;
  }

  /**
   * The live value and version of a counter of rows, for `replace`; null for a row Redis does not hold
   * (read it first). A loaded row without a version gets one.
   */
  async versioned(
    counted: CountedEntity,
    field: CounterField,
    ids: ReadonlyArray<string | number>,
  ): Promise<Array<VersionedValue | null>> {
    const rows = ids.map((id) => this.address(counted.target, id, field.name));
    const byShard = [...groupBy([...rows.keys()], (row) => rows[row].shard.tag).values()];
    const replies = await this.store.readVersioned(
      byShard.map((group) => ({ shard: rows[group[0]].shard, encodedIds: group.map((row) => rows[row].encodedId) })),
      field.name,
      newVersion(),
    );
    const values: Array<VersionedValue | null> = new Array(rows.length);
    byShard.forEach((group, g) => group.forEach((row, r) => (values[row] = replies[g][r])));
    return values;
  }

  /**
   * Sets a counter to `value` only while its live value and version are `expected` (read by
   * `versioned`): 'changed' when either moved (or the row expired), 'out-of-range' when `value` is outside
   * the counter's bounds; nothing written either way.
   */
  async replace(
    counted: CountedEntity,
    field: CounterField,
    id: string | number,
    expected: VersionedValue,
    value: number,
  ): Promise<ReplaceOutcome> {
    const { shard, encodedId } = this.address(counted.target, id, field.name);
    const { min, max } = field;
    const version = newVersion();
    const outcome = await this.store.set({ shard, encodedId, counter: field.name, value, min, max, version, expected });
    this.outages.changeAnswered(outcome.kind === 'applied');
    if (outcome.kind === 'applied' || outcome.kind === 'out-of-range') return outcome.kind;
    return 'changed';
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
    // A windowed counter's scriptName makes the script add the change to its buckets too.
    return { ...row, request: { shard, encodedId, counter: field.scriptName, delta, min, max, idempotencyKey } };
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
   * database and trying again, as long as a `SeedRetry` allows.
   */
  private async finishChange(
    { counted, field, rowId }: AddressedCounter,
    first: IncrementOutcome,
    retry: () => Promise<IncrementOutcome>,
    deltaFrom: (current: number) => number,
  ): Promise<AppliedOutcome> {
    let outcome = first;
    const contention = new SeedRetry();
    for (let attempt = 1; ; attempt++) {
      if (outcome.kind === 'applied' || outcome.kind === 'already-applied') return outcome;
      if (outcome.kind === 'out-of-range') {
        throw CounterOutOfRangeError.ofChange(
          { entity: counted.name, id: rowId.text, counter: field.name },
          outcome.current,
          deltaFrom(outcome.current),
          field,
        );
      }
      if (attempt > 1 && !(await contention.next())) break;
      const seeded = await this.reader.ensureSeeded({ entity: counted, id: rowId });
      if (!seeded) throw CounterRowNotFoundError.of(counted.name, rowId.text);
      outcome = await retry();
    }
    throw CounterSeedContentionError.of(counted.name, rowId.text);
  }
}

/** What a compare-and-set of a counter did (see `CounterChangeApplier.replace`). */
export type ReplaceOutcome = 'applied' | 'changed' | 'out-of-range';

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

/**
 * The change's idempotency key, undefined when it has none; refuses one that is not a short string, or
 * not well-formed Unicode (sent as UTF-8, a lone surrogate becomes U+FFFD, and different keys would collide).
 */
function idempotencyKeyOf(options: CounterChangeOptions | undefined): string | undefined {
  const key: unknown = options?.idempotencyKey;
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || key === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    throw new InvalidIdempotencyKeyError(MESSAGES.invalidIdempotencyKey(key, MAX_IDEMPOTENCY_KEY_LENGTH));
  const surrogate = loneSurrogateAt(key);
  if (surrogate !== -1) throw new InvalidIdempotencyKeyError(MESSAGES.idempotencyKeyNotUnicode(surrogate));
  return key;
}

/** A counter's new version (set.lua.ts): random, so that no version a recount read ever comes back. */
function newVersion(): string {
  return randomBytes(8).toString('hex');
}
