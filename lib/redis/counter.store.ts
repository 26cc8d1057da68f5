import type { ChainableCommander } from 'ioredis';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import { MESSAGES } from '../counter.messages.js';
import { ACK_LUA } from './scripts/ack.script.js';
import { CLAIM_LUA } from './scripts/claim.script.js';
import { INCREMENT_LUA } from './scripts/increment.script.js';
import { READ_LUA } from './scripts/read.script.js';
import { RELEASE_LUA } from './scripts/release.script.js';
import { SEED_LUA } from './scripts/seed.script.js';
import type { ShardKeys } from './keys.js';
import { isCluster, type RedisClient } from './redis-connection.js';

type Arg = string | number;

/** The scripts, registered once per client with `defineCommand` (sent by SHA, loaded on NOSCRIPT). */
const SCRIPTS = {
  nestjsCounterIncrement: { lua: INCREMENT_LUA, numberOfKeys: 3 },
  nestjsCounterRead: { lua: READ_LUA },
  nestjsCounterSeed: { lua: SEED_LUA },
  nestjsCounterClaim: { lua: CLAIM_LUA, numberOfKeys: 3 },
  nestjsCounterAck: { lua: ACK_LUA, numberOfKeys: 4 },
  nestjsCounterRelease: { lua: RELEASE_LUA, numberOfKeys: 1 },
} as const;

type ScriptName = keyof typeof SCRIPTS;
type ScriptCommands<R> = { [name in ScriptName]: (...args: Arg[]) => R };
type ScriptClient = RedisClient & ScriptCommands<Promise<unknown>>;
interface ScriptPipeline extends ChainableCommander, ScriptCommands<ScriptPipeline> {}

/**
 * States in which a command can be sent now: connected, or a lazy client's first command (which
 * connects it). In any other state it would be refused or queued, so it is refused before sending.
 */
const SENDABLE_STATES = new Set(['ready', 'wait']);

export type IncrementOutcome =
  | { kind: 'applied'; value: number }
  | { kind: 'unseeded'; generation: string }
  | { kind: 'out-of-range'; current: number };

export interface ShardRowsRequest {
  shard: ShardKeys;
  encodedIds: string[];
  counters: string[];
}

export interface ShardRowsResult {
  generation: string;
  /** Per row, per counter: the live value, or null when the row is not seeded. */
  values: (number | null)[][];
}

export interface ShardSeedRequest extends ShardRowsRequest {
  generation: string;
  /** Per row, per counter: the database value. */
  databaseValues: number[][];
}

/** Per row: its live values, or null when it could not be seeded yet. Null for all: generation moved. */
export type ShardSeedResult = (number[] | null)[] | null;

export interface BatchEntry {
  encodedId: string;
  counter: string;
  delta: number;
}

export type ClaimOutcome =
  | { kind: 'busy' }
  | { kind: 'empty' }
  | { kind: 'batch'; recovered: boolean; batchId: string; more: boolean; entries: BatchEntry[] };

export interface ClaimRequest {
  token: string;
  leaseMs: number;
  batchId: string;
  limit: number;
  ttlSeconds: number;
}

/** Runs the counter scripts against Redis and turns their replies into typed results. */
export class CounterStore {
  private readonly client: ScriptClient;

  constructor(client: RedisClient) {
    for (const [name, definition] of Object.entries(SCRIPTS)) {
      if (typeof (client as unknown as Record<string, unknown>)[name] !== 'function') {
        client.defineCommand(name, definition);
      }
    }
    this.client = client as ScriptClient;
  }

  async increment(
    shard: ShardKeys,
    encodedId: string,
    counter: string,
    delta: number,
    min: number,
    max: number,
  ): Promise<IncrementOutcome> {
    const reply = (await this.call(() =>
      this.client.nestjsCounterIncrement(
        shard.row(encodedId),
        shard.dirty,
        shard.generation,
        encodedId,
        counter,
        delta,
        min,
        max,
      ),
    )) as [number, number | string];
    if (reply[0] === 1) return { kind: 'applied', value: Number(reply[1]) };
    if (reply[0] === 0) return { kind: 'unseeded', generation: String(reply[1]) };
    return { kind: 'out-of-range', current: Number(reply[1]) };
  }

  /** Live values of rows grouped by shard: one script call per shard, one round trip per node. */
  async readRows(requests: ShardRowsRequest[]): Promise<ShardRowsResult[]> {
    const replies = await this.runPerShard(requests, (target, { shard, encodedIds, counters }) =>
      target.nestjsCounterRead(
        encodedIds.length + 1,
        shard.generation,
        ...encodedIds.map((id) => shard.row(id)),
        ...counters,
      ),
    );
    return replies.map((reply, i) => {
      const [generation, ...flat] = reply as [string, ...(string | null)[]];
      const width = requests[i].counters.length;
      const values = requests[i].encodedIds.map((_, row) =>
        flat.slice(row * width, (row + 1) * width).map((value) => (value === null ? null : Number(value))),
      );
      return { generation: String(generation), values };
    });
  }

  async seedRows(requests: ShardSeedRequest[], ttlSeconds: number): Promise<ShardSeedResult[]> {
    const replies = await this.runPerShard(requests, (target, request) =>
      target.nestjsCounterSeed(
        request.encodedIds.length + 1,
        request.shard.generation,
        ...request.encodedIds.map((id) => request.shard.row(id)),
        request.generation,
        ttlSeconds,
        request.counters.length,
        ...request.counters,
        ...request.databaseValues.flat(),
      ),
    );
    return replies.map((reply, i) => {
      if (reply === null) return null;
      const flat = reply as (string | null)[];
      const width = requests[i].counters.length;
      return requests[i].encodedIds.map((_, row) => {
        const values = flat.slice(row * width, (row + 1) * width);
        return values.some((value) => value === null) ? null : values.map(Number);
      });
    });
  }

  async claim(shard: ShardKeys, request: ClaimRequest): Promise<ClaimOutcome> {
    const reply = (await this.call(() =>
      this.client.nestjsCounterClaim(
        shard.dirty,
        shard.batch,
        shard.lease,
        shard.rowPrefix,
        request.token,
        request.leaseMs,
        request.batchId,
        request.limit,
        request.ttlSeconds,
        Date.now(),
      ),
    )) as string[];
    const [kind, batchId, more, ...flat] = reply;
    if (kind === 'busy' || kind === 'empty') return { kind };
    const entries: BatchEntry[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const separator = flat[i].indexOf('\n');
      entries.push({
        encodedId: flat[i].slice(0, separator),
        counter: flat[i].slice(separator + 1),
        delta: Number(flat[i + 1]),
      });
    }
    return { kind: 'batch', recovered: kind === 'pending', batchId, more: Number(more) === 1, entries };
  }

  /** Returns false when the batch had already been acknowledged (by a flusher that took over). */
  async ack(
    shard: ShardKeys,
    batchId: string,
    token: string,
    release: boolean,
    missingEncodedIds: string[],
    ttlSeconds: number,
  ): Promise<boolean> {
    const reply = await this.call(() =>
      this.client.nestjsCounterAck(
        shard.batch,
        shard.lease,
        shard.generation,
        shard.dirty,
        shard.rowPrefix,
        batchId,
        ttlSeconds,
        token,
        release ? '1' : '0',
        ...missingEncodedIds,
      ),
    );
    return Number(reply) === 1;
  }

  async release(shard: ShardKeys, token: string): Promise<void> {
    await this.call(() => this.client.nestjsCounterRelease(shard.lease, token));
  }

  private async runPerShard<T>(
    requests: T[],
    send: (target: ScriptCommands<unknown>, request: T) => unknown,
  ): Promise<unknown[]> {
    if (requests.length === 0) return [];
    return this.call(async () => {
      // A cluster pipeline must stay on one node; script calls of different shards go out together
      // and ioredis routes each to its node. A single Redis takes them all in one pipeline.
      if (isCluster(this.client)) {
        return Promise.all(requests.map((request) => send(this.client, request) as Promise<unknown>));
      }
      const pipeline = this.client.pipeline() as ScriptPipeline;
      for (const request of requests) send(pipeline, request);
      const results = (await pipeline.exec()) ?? [];
      return results.map(([error, reply]: [Error | null, unknown]) => {
        if (error) throw error;
        return reply;
      });
    });
  }

  private async call<T>(operation: () => Promise<T>): Promise<T> {
    if (!SENDABLE_STATES.has(this.client.status)) {
      throw new CounterStoreUnavailableError(MESSAGES.storeUnavailable(`connection is ${this.client.status}`, false));
    }
    try {
      return await operation();
    } catch (error) {
      // A ReplyError is Redis refusing a command: a bug to surface, not an outage.
      if (error instanceof Error && error.name !== 'ReplyError') {
        throw new CounterStoreUnavailableError(MESSAGES.storeUnavailable(error.message, true), { cause: error });
      }
      throw error;
    }
  }
}
