import type { ShardKeys } from './counter.keys.js';
import { MAX_ROWS_PER_CALL } from '../counter.constants.js';
import { inRequestOrder } from '../collections.js';
import type { ChangeOutcome, IncrementRequest } from './increment.batcher.js';
import { REPLY, type Arg } from './script-commands.js';
import { scriptCall, type ScriptRunner } from './script.runner.js';

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

/** As a change's (an applied set gives the live value it replaced), or the live value not the one expected. */
export type SetOutcome = ChangeOutcome | { kind: 'changed'; current: number };

/**
 * Live values in Redis (changes go through IncrementBatcher): sets, reads of
 * rows, and loads of rows from database values. Reads and loads of rows of several shards go in one
 * script call per slot (one in all on a single Redis), at most MAX_ROWS_PER_CALL rows each, and one round
 * trip per node.
 */
export class CounterStore {
  /**
   * @param rowTtlSeconds how long a row stays cached after it was loaded or first changed since a claim.
   */
  constructor(
    private readonly runner: ScriptRunner,
    private readonly rowTtlSeconds: number,
  ) {}

  /**
   * Sets one counter of one row (see set.lua.ts), with the other calls of this turn. `changed` only
   * when the request gives the value and version it expects.
   */
  set(request: SetRequest & { expected?: undefined }): Promise<ChangeOutcome>;
  set(request: SetRequest): Promise<SetOutcome>;
  set({ shard, encodedId, counter, value, min, max, version, expected }: SetRequest): Promise<SetOutcome> {
    const keys = [shard.row(encodedId), shard.pending, shard.dirty, shard.generation];
    const args: Arg[] = [this.rowTtlSeconds, encodedId, counter, value, min, max, version];
    if (expected !== undefined) args.push(expected.value, expected.version);
    return this.runner.sendInTurn(scriptCall('nestjsCounterSet', shard.slot, keys, args, readSetOutcome));
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
    const groups = this.runner.groupsForCalls(requests, slotOf, MAX_ROWS_PER_CALL, rowCount);
    const calls = groups.map((group) => {
      const keys = group.flatMap(({ shard, encodedIds }) => encodedIds.map((id) => shard.row(id)));
      return scriptCall('nestjsCounterVersionedRead', group[0].shard.slot, keys, [counter, newVersion], (reply) => {
        const flat = reply as string[];
        let at = 0;
        return group.map(({ encodedIds }) =>
          encodedIds.map(() => {
            const [value, version] = [flat[at++], flat[at++]];
            return value === '' ? null : { value: Number(value), version };
          }),
        );
      });
    });
    return inRequestOrder(requests, groups, await Promise.all(this.runner.sendNow(calls)));
  }

  /** Live values of rows grouped by shard (see read.lua.ts). */
  async readRows(requests: ShardRowsRequest[]): Promise<ShardRowsResult[]> {
    const groups = this.runner.groupsForCalls(requests, slotOf, MAX_ROWS_PER_CALL, rowCount);
    const calls = groups.map((group) => {
      const keys: string[] = [];
      let lines = '';
      let previous: readonly string[] = [];
      for (const { shard, encodedIds, counters } of group) {
        keys.push(shard.generation);
        for (const encodedId of encodedIds) keys.push(shard.row(encodedId));
        lines += `${encodedIds.length}|${sameItems(counters, previous) ? '' : counters.join(' ')}\n`;
        previous = counters;
      }
      return scriptCall('nestjsCounterRead', group[0].shard.slot, keys, [lines], (reply) => {
        // Per shard its generation, then per row one value per counter, '' where there is none.
        const values = (reply as string).split(' ');
        let at = 0;
        return group.map(({ encodedIds, counters }) => {
          const generation = values[at++];
          const rows = encodedIds.map(() =>
            counters.map(() => {
              const value = values[at++];
              return value === '' ? null : Number(value);
            }),
          );
          return { generation, values: rows };
        });
      });
    });
    return inRequestOrder(requests, groups, await Promise.all(this.runner.sendNow(calls)));
  }

  /** Loads rows grouped by shard from their database values (see seed.lua.ts). */
  async seedRows(requests: ShardSeedRequest[]): Promise<ShardSeedResult[]> {
    const groups = this.runner.groupsForCalls(requests, slotOf, MAX_ROWS_PER_CALL, rowCount);
    const calls = groups.map((group) => {
      const keys: string[] = [];
      const args: Arg[] = [this.rowTtlSeconds];
      for (const { shard, generation, encodedIds, counters, databaseValues } of group) {
        keys.push(shard.generation, shard.batch, shard.pending, shard.unknown);
        keys.push(...encodedIds.map((encodedId) => shard.row(encodedId)));
        args.push(generation, encodedIds.length, counters.length, ...counters, ...encodedIds);
        for (const values of databaseValues) args.push(...values);
      }
      return scriptCall('nestjsCounterSeed', group[0].shard.slot, keys, args, (reply) => {
        const flat = reply as Array<string | number | null>;
        let at = 0;
        return group.map(({ encodedIds, counters }): ShardSeedResult => {
          if (flat[at++] === REPLY.seed.generationMoved) return null;
          return encodedIds.map(() => {
            const values = flat.slice(at, (at += counters.length));
            return values.some((value) => value === null) ? null : values.map(Number);
          });
        });
      });
    });
    return inRequestOrder(requests, groups, await Promise.all(this.runner.sendNow(calls)));
  }
}

function readSetOutcome(reply: unknown): SetOutcome {
  const [kind, result] = reply as [number, string | number];
  if (kind === REPLY.set.unseeded) return { kind: 'unseeded', generation: String(result) };
  if (kind === REPLY.set.outOfRange) return { kind: 'out-of-range', current: Number(result) };
  if (kind === REPLY.set.changed) return { kind: 'changed', current: Number(result) };
  return { kind: 'applied', value: Number(result) };
}

function slotOf(request: { shard: ShardKeys }): number {
  return request.shard.slot;
}

function rowCount(request: { encodedIds: string[] }): number {
  return request.encodedIds.length;
}

function sameItems(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((item, index) => item === b[index]));
}
