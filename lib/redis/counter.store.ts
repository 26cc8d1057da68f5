import type { ShardKeys } from './counter.keys.js';
import { IncrementBatcher, type IncrementOutcome, type IncrementRequest } from './increment.batcher.js';
import type { Arg } from './script-commands.js';
import type { ScriptRunner } from './script.runner.js';

export interface ShardRowsRequest {
  shard: ShardKeys;
  encodedIds: string[];
  counters: string[];
}

export interface ShardRowsResult {
  /** The shard's generation, read with the rows; '' when no row misses a counter (nothing to load). */
  generation: string;
  /** Per row, per counter: the live value, or null when the row is not loaded. */
  values: (number | null)[][];
}

export interface ShardSeedRequest extends ShardRowsRequest {
  /** The generation read with the rows, before the database was. */
  generation: string;
  /** Per row, per counter: the database value. */
  databaseValues: number[][];
}

/** Per row: its live values, or null when it could not be loaded yet. Null for all: the generation moved. */
export type ShardSeedResult = (number[] | null)[] | null;

/** A counter's live value and its version (see versioned-read.lua.ts): what a compare-and-set expects. */
export interface VersionedValue {
  value: number;
  version: string;
}

/**
 * A counter of a row to set to `value` (see set.lua.ts), if `expected` is given only while its live
 * value and version are those. `version` is the counter's new version, kept when the value changes.
 */
export interface SetRequest extends Omit<IncrementRequest, 'delta'> {
  value: number;
  version: string;
  expected?: VersionedValue;
}

/** One counter of rows of a shard, to read with its version. */
export interface VersionedReadRequest {
  shard: ShardKeys;
  encodedIds: string[];
}

/** As an increment's (an applied set gives the live value it replaced), or the live value not the one expected. */
export type SetOutcome = IncrementOutcome | { kind: 'changed'; current: number };

/**
 * Live values in Redis: changes (batched per turn of the event loop), reads of rows, and loads of rows
 * from database values. Reads and loads of rows of several shards go in one script call per slot (one in
 * all on a single Redis), at most MAX_ROWS_PER_CALL rows each, and one round trip per node.
 */
export class CounterStore {
  private readonly increments: IncrementBatcher;

  /**
   * @param rowTtlSeconds how long a row stays cached after it was loaded or first changed since a claim.
   * @param idempotencyTtlSeconds how long a keyed change's key is remembered.
   */
  constructor(
    private readonly runner: ScriptRunner,
    private readonly rowTtlSeconds: number,
    idempotencyTtlSeconds: number,
  ) {
    this.increments = new IncrementBatcher(runner, rowTtlSeconds, idempotencyTtlSeconds);
  }

  /** Changes one counter of one row (see increment.lua.ts). */
  increment(request: IncrementRequest): Promise<IncrementOutcome> {
    return this.increments.increment(request);
  }

  /** Sets one counter of one row (see set.lua.ts). */
  async set({ shard, encodedId, counter, value, min, max, version, expected }: SetRequest): Promise<SetOutcome> {
    const keys = [shard.row(encodedId), shard.pending, shard.dirty, shard.generation];
    const reply = (await this.runner.callOnShard(shard, (target, done) =>
      target.nestjsCounterSet(
        keys.length,
        ...keys,
        this.rowTtlSeconds,
        encodedId,
        counter,
        value,
        min,
        max,
        version,
        ...(expected === undefined ? [] : [expected.value, expected.version]),
        done,
      ),
    )) as [number, string | number];
    const [kind, result] = reply;
    if (kind === 0) return { kind: 'unseeded', generation: String(result) };
    if (kind === 2) return { kind: 'out-of-range', current: Number(result) };
    if (kind === 3) return { kind: 'changed', current: Number(result) };
    return { kind: 'applied', value: Number(result) };
  }

  /**
   * One counter of rows grouped by shard, each with its version (see versioned-read.lua.ts); a loaded
   * row without one gets `newVersion`. Per request, per row: null when the row is not loaded.
   */
  async readVersioned(
    requests: VersionedReadRequest[],
    counter: string,
    newVersion: string,
  ): Promise<Array<Array<VersionedValue | null>>> {
    const calls = this.runner.rowCallsBySlot(requests);
    const replies = await this.runner.runPerCall(requests, calls, (target, indexes) => {
      const keys = indexes.flatMap((index) => requests[index].encodedIds.map((id) => requests[index].shard.row(id)));
      return target.nestjsCounterVersionedRead(keys.length, ...keys, counter, newVersion);
    });
    const results: Array<Array<VersionedValue | null>> = new Array(requests.length);
    calls.forEach((indexes, call) => {
      const flat = replies[call] as string[];
      let at = 0;
      for (const index of indexes) {
        results[index] = requests[index].encodedIds.map(() => {
          const [value, version] = [flat[at++], flat[at++]];
          return value === '' ? null : { value: Number(value), version };
        });
      }
    });
    return results;
  }

  /** Live values of rows grouped by shard (see read.lua.ts). */
  async readRows(requests: ShardRowsRequest[]): Promise<ShardRowsResult[]> {
    const calls = this.runner.rowCallsBySlot(requests);
    const replies = await this.runner.runPerCall(requests, calls, (target, indexes) => {
      const keys: string[] = [];
      let lines = '';
      let previous: readonly string[] = [];
      for (const index of indexes) {
        const { shard, encodedIds, counters } = requests[index];
        keys.push(shard.generation);
        for (const encodedId of encodedIds) keys.push(shard.row(encodedId));
        lines += `${encodedIds.length}|${sameItems(counters, previous) ? '' : counters.join(' ')}\n`;
        previous = counters;
      }
      return target.nestjsCounterRead(keys.length, ...keys, lines);
    });
    const results: ShardRowsResult[] = new Array(requests.length);
    calls.forEach((indexes, call) => {
      // Per shard its generation, then per row one value per counter, '' where there is none.
      const values = (replies[call] as string).split(' ');
      let at = 0;
      for (const index of indexes) {
        const { encodedIds, counters } = requests[index];
        const generation = values[at++];
        const rows = encodedIds.map(() =>
          counters.map(() => {
            const value = values[at++];
            return value === '' ? null : Number(value);
          }),
        );
        results[index] = { generation, values: rows };
      }
    });
    return results;
  }

  /** Loads rows grouped by shard from their database values (see seed.lua.ts). */
  async seedRows(requests: ShardSeedRequest[]): Promise<ShardSeedResult[]> {
    const calls = this.runner.rowCallsBySlot(requests);
    const replies = await this.runner.runPerCall(requests, calls, (target, indexes) => {
      const keys: string[] = [];
      const args: Arg[] = [this.rowTtlSeconds];
      for (const index of indexes) {
        const { shard, generation, encodedIds, counters, databaseValues } = requests[index];
        keys.push(shard.generation, shard.batch, shard.pending, shard.unknown);
        keys.push(...encodedIds.map((encodedId) => shard.row(encodedId)));
        args.push(generation, encodedIds.length, counters.length, ...counters, ...encodedIds);
        for (const values of databaseValues) args.push(...values);
      }
      return target.nestjsCounterSeed(keys.length, ...keys, ...args);
    });
    const results: ShardSeedResult[] = new Array(requests.length);
    calls.forEach((indexes, call) => {
      const flat = replies[call] as Array<string | number | null>;
      let at = 0;
      for (const index of indexes) {
        if (flat[at++] === 0) {
          results[index] = null;
          continue;
        }
        const width = requests[index].counters.length;
        results[index] = requests[index].encodedIds.map(() => {
          const values = flat.slice(at, (at += width));
          return values.some((value) => value === null) ? null : values.map(Number);
        });
      }
    });
    return results;
  }
}

function sameItems(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((item, index) => item === b[index]));
}
