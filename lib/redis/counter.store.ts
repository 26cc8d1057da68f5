import { Logger } from '@nestjs/common';
import type { ChainableCommander } from 'ioredis';
import { CounterReplicationLagError } from '../exceptions/counter-replication-lag.error.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import { MESSAGES } from '../counter.messages.js';
import { MAX_CHANGES_PER_CALL, MAX_ROWS_PER_CALL, MAX_SAFE_COUNT, MAX_SHARDS_PER_STATUS_CALL } from '../counter.constants.js';
import { groupBy } from '../group-by.js';
import { ACK_LUA } from './scripts/ack.script.js';
import { CLAIM_LUA } from './scripts/claim.script.js';
import { GIVE_BACK_LUA } from './scripts/give-back.script.js';
import { INCREMENT_MANY_LUA, INCREMENT_ONE_LUA } from './scripts/increment.script.js';
import { READ_LUA } from './scripts/read.script.js';
import { RELEASE_LUA } from './scripts/release.script.js';
import { SEED_LUA } from './scripts/seed.script.js';
import { STATUS_LUA } from './scripts/status.script.js';
import type { ShardKeys } from './keys.js';
import { keepStringPrototypeFast } from './fast-string-prototype.js';
import { batchRowsOf, NO_BATCH_ROWS, type BatchRows, type ClaimedRows } from './batch-rows.js';
import { UnreadableDumpError } from './hash-dump.js';
import { TickQueue, type Queued } from './tick-queue.js';
import { isCluster, type RedisClient } from './redis-connection.js';

type Arg = string | number;

/** The scripts, registered once per client with `defineCommand` (sent by SHA, loaded on NOSCRIPT). */
const SCRIPTS = {
  nestjsCounterIncrement: { lua: INCREMENT_ONE_LUA, numberOfKeys: 1 },
  nestjsCounterIncrementMany: { lua: INCREMENT_MANY_LUA },
  nestjsCounterRead: { lua: READ_LUA },
  nestjsCounterSeed: { lua: SEED_LUA },
  nestjsCounterClaim: { lua: CLAIM_LUA, numberOfKeys: 6 },
  nestjsCounterAck: { lua: ACK_LUA, numberOfKeys: 5 },
  nestjsCounterGiveBack: { lua: GIVE_BACK_LUA, numberOfKeys: 3 },
  nestjsCounterRelease: { lua: RELEASE_LUA, numberOfKeys: 1 },
  nestjsCounterStatus: { lua: STATUS_LUA },
} as const;

type ScriptName = keyof typeof SCRIPTS;
/** A command's reply, handed over as it arrives (ioredis calls a command's last argument so). */
type ReplyCallback = (error: Error | null | undefined, reply?: unknown) => void;
type ScriptCommands<R> = { [name in ScriptName | 'nestjsCounterClaimBuffer']: (...args: Array<Arg | ReplyCallback>) => R };
type ScriptClient = RedisClient & ScriptCommands<Promise<unknown>>;
interface ScriptPipeline extends ChainableCommander, ScriptCommands<ScriptPipeline> {}
/** Where a call goes: the client itself (a lone call) or a pipeline; what both offer. */
type CallTarget = ScriptCommands<unknown> & {
  set(key: string, value: string, mode: 'NX'): unknown;
  hgetall(key: string, done?: ReplyCallback): unknown;
};

/**
 * States in which a command can be sent now: connected, or a lazy client's first command (which
 * connects it). In any other state it would be refused or queued, so it is refused before sending.
 */
const SENDABLE_STATES = new Set(['ready', 'wait']);

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
 * Replies with which Redis refuses a command without running it, while a cluster moves slots or fails
 * over: an outage to wait out, not a bug.
 */
const TRANSIENT_REFUSAL = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|LOADING|MASTERDOWN|READONLY)\b/;

/** A call on one shard's keys (see `CounterStore.onShard`): made on `target`, its reply handed to `done`. */
interface ShardCall {
  shard: ShardKeys;
  send(target: CallTarget, done: ReplyCallback): unknown;
}

export interface ShardRowsRequest {
  shard: ShardKeys;
  encodedIds: string[];
  counters: string[];
}

export interface ShardRowsResult {
  /** The shard's generation, read with the rows; '' when no row misses a counter (nothing to seed). */
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

/**
 * `dataLost`: the shard's generation key was gone (Redis lost the shard's data) and was recreated.
 * `generation`: the shard's generation when claimed; it only grows unless Redis loses the shard's data.
 */
export type ClaimOutcome = { dataLost: boolean; generation: number } & (
  | { kind: 'busy' }
  | { kind: 'empty' }
  | {
      kind: 'batch';
      recovered: boolean;
      batchId: string;
      /** Rows of the shard still dirty after this claim. */
      moreRows: number;
    } & ClaimedRows
);

/**
 * The claim script's reply as read (see CLAIM_LUA): kind, lost, generation, then for a batch its id,
 * the rows still dirty and its DUMP. Strings come as Buffers, integers as numbers.
 */
type ClaimReply = Array<Buffer | number | null>;

/** What one shard has waiting for the database. */
export interface ShardBacklog {
  /** Rows with changes not yet claimed. */
  dirtyRows: number;
  /** Rows in the shard's claimed batch (0 when there is none). */
  batchRows: number;
  /** Age of the oldest change waiting (dirty or claimed), in ms; null when nothing waits. */
  oldestAgeMs: number | null;
  /** The shard's generation; null when its key is missing (Redis lost the shard's data, or it is new). */
  generation: number | null;
}

export interface ClaimRequest {
  /** The counters to claim: the entity's. */
  counters: string[];
  /** Whether the entity's ids are integers (see `batchRowsOf`). */
  numericIds: boolean;
  token: string;
  leaseMs: number;
  batchId: string;
  limit: number;
}

/** Runs the counter scripts against Redis and turns their replies into typed results. */
export class CounterStore {
  private readonly logger = new Logger('CounterStore');
  private readonly client: ScriptClient;
  /** Whether a claim's batch could not be read from its DUMP yet (logged once). */
  private unreadableDumpSeen = false;
  private readonly increments: TickQueue<IncrementRequest, IncrementOutcome>;
  /** Flush calls of single shards (claims, acks, releases): see `onShard`. */
  private readonly shardCalls = new TickQueue<ShardCall, unknown>(Number.POSITIVE_INFINITY, 0, (queued) => this.sendShardCalls(queued));

  /**
   * @param replicaWaitMs on a cluster, how long a claim waits for the replicas of its node (see `claim`).
   * @param rowTtlSeconds how long a row stays cached after its seed or its first change since a claim.
   */
  constructor(
    client: RedisClient,
    private readonly replicaWaitMs: number,
    private readonly rowTtlSeconds: number,
  ) {
    // Here, when the application starts, rather than when this file loads: after every module that
    // could have taken String.prototype out of fast mode (ioredis among them) has loaded.
    keepStringPrototypeFast();
    for (const [name, definition] of Object.entries(SCRIPTS)) {
      if (typeof (client as unknown as Record<string, unknown>)[name] !== 'function') {
        client.defineCommand(name, definition);
      }
    }
    this.client = client as ScriptClient;
    // A single Redis takes one call's worth per turn (see TickQueue), with at most ten calls' worth
    // waiting. On a cluster a turn's changes split into calls per slot that several masters run at
    // once: all of them go (scale-out bench, quick run: 51,123 increments/s, against 29,321/s with one
    // call's worth per turn).
    const perTurn = isCluster(client) ? Number.POSITIVE_INFINITY : MAX_CHANGES_PER_CALL;
    this.increments = new TickQueue(perTurn, 10 * MAX_CHANGES_PER_CALL, (queued) => this.sendIncrements(queued));
  }

  /**
   * Changes one counter of one row. The changes requested in one turn of the event loop go to Redis
   * together, in one script call per slot (one in all on a single Redis): still one round trip each,
   * and a call's fixed cost shared by every change in it.
   */
  increment(request: IncrementRequest): Promise<IncrementOutcome> {
    if (!SENDABLE_STATES.has(this.client.status)) return Promise.reject(this.notSendable());
    return this.increments.add(request);
  }

  /**
   * Live values of rows grouped by shard: one script call for every shard on a single Redis, one per
   * slot on a cluster (each at most MAX_ROWS_PER_CALL rows), and one round trip per node either way.
   */
  async readRows(requests: ShardRowsRequest[]): Promise<ShardRowsResult[]> {
    const calls = this.rowCallsBySlot(requests);
    const replies = await this.runPerCall(requests, calls, (target, indexes) => {
      // Per slot tag, a line per shard (see READ_LUA); counters left empty when those of the line before.
      const args: string[] = [];
      let slotTag = '';
      let lines = '';
      let previous: readonly string[] = [];
      for (const index of indexes) {
        const { shard, encodedIds, counters } = requests[index];
        if (shard.slotTag !== slotTag) {
          if (lines !== '') args.push(slotTag, lines);
          slotTag = shard.slotTag;
          lines = '';
        }
        lines += `${shard.shard}|${sameItems(counters, previous) ? '' : counters.join(' ')}|${encodedIds.join(' ')}\n`;
        previous = counters;
      }
      args.push(slotTag, lines);
      return target.nestjsCounterRead(1, requests[indexes[0]].shard.generation, ...args);
    });
    const results: ShardRowsResult[] = new Array(requests.length);
    calls.forEach((indexes, call) => {
      // Per shard its generation, then per row one value per counter, '' where there is none.
      const values = (replies[call] as string).split(' ');
      let at = 0;
      for (const index of indexes) {
        const { encodedIds, counters } = requests[index];
        const generation = values[at++];
        const rows: (number | null)[][] = new Array(encodedIds.length);
        for (let row = 0; row < rows.length; row++) {
          const counts: (number | null)[] = new Array(counters.length);
          for (let counter = 0; counter < counts.length; counter++, at++) counts[counter] = values[at] === '' ? null : Number(values[at]);
          rows[row] = counts;
        }
        results[index] = { generation, values: rows };
      }
    });
    return results;
  }

  /**
   * Seeds rows grouped by shard, as `readRows` reads them: one script call for every shard on a single
   * Redis, one per slot on a cluster.
   */
  async seedRows(requests: ShardSeedRequest[]): Promise<ShardSeedResult[]> {
    const calls = this.rowCallsBySlot(requests);
    const replies = await this.runPerCall(requests, calls, (target, indexes) => {
      const keys: string[] = [];
      const args: Arg[] = [this.rowTtlSeconds];
      for (const index of indexes) {
        const { shard, generation, encodedIds, counters, databaseValues } = requests[index];
        keys.push(shard.generation, shard.batch, shard.pending, shard.unknown);
        args.push(generation, shard.rowPrefix, encodedIds.length, counters.length, ...counters, ...encodedIds);
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

  /**
   * Takes the shard's lease and claims a batch (or the batch left behind). On a cluster the claim must
   * reach the replicas before the batch is written to the database: a replica promoted without it would
   * still hold the deltas as pending and flush them a second time. So a claim that holds a batch is
   * followed by `WAIT` for every replica of its node; if they do not confirm in time, the batch stays
   * claimed in Redis and a later flush picks it up (as a left-behind batch) and waits again.
   */
  async claim(shard: ShardKeys, request: ClaimRequest): Promise<ClaimOutcome> {
    const reply = await this.call(() => this.sendClaim(shard, request));
    // Read by position, and the outcome made in one shape. The reply destructured (an array iterator)
    // and the outcome spread from objects of several shapes, V8 threw this function's optimized code
    // away at each new shape it met and compiled it again, its parsing inlined: 33-49 ms of a compiler
    // thread each time, three times in a flush bench run, the third during the SQLite flushes, where
    // that thread takes the second core from Redis (`--trace-opt --trace-deopt`).
    const kind = String(reply[0]);
    const dataLost = Number(reply[1]) === 1;
    const generation = Number(String(reply[2]));
    if (kind === 'busy' || kind === 'empty') return { kind, dataLost, generation };
    const batchId = String(reply[3]);
    // No batch when every change netted to zero (the claim kept none: batchId is '').
    const claimed = batchId === '' ? NO_BATCH_ROWS : await this.claimedRows(shard, (reply[5] as Buffer | undefined) ?? null, request);
    return {
      kind: 'batch',
      dataLost,
      generation,
      recovered: kind === 'pending',
      batchId,
      moreRows: Number(String(reply[4])),
      rows: claimed.rows,
      unknown: claimed.unknown,
    };
  }

  /**
   * The claim script's reply, its strings as Buffers (for the batch's DUMP, its sixth element), once the
   * replicas have it where a batch was claimed (see `claim`).
   */
  private async sendClaim(shard: ShardKeys, request: ClaimRequest): Promise<ClaimReply> {
    const args: Arg[] = [
      shard.dirty,
      shard.batch,
      shard.lease,
      shard.generation,
      shard.pending,
      shard.unknown,
      request.token,
      request.leaseMs,
      request.batchId,
      request.limit,
      Date.now(),
      ...request.counters,
    ];
    const reply = (await this.onShard(shard, (target, done) => target.nestjsCounterClaimBuffer(...args, done))) as ClaimReply;
    const kind = String(reply[0]);
    if ((kind === 'claimed' || kind === 'pending') && String(reply[3]) !== '') await this.awaitReplicas(shard);
    return reply;
  }

  /**
   * A claimed batch's rows from the `DUMP` of its hash; from an `HGETALL` of it, which costs more, where
   * Redis refused the `DUMP` (null: an ACL) or gave a payload in a form this library does not read (a
   * Redis version that dumps hashes otherwise).
   */
  private async claimedRows(
    shard: ShardKeys,
    payload: Buffer | null,
    { counters, numericIds }: ClaimRequest,
  ): Promise<ClaimedRows> {
    let reason = MESSAGES.dumpRefused();
    if (payload) {
      try {
        return batchRowsOf({ payload }, counters, numericIds);
      } catch (error) {
        if (!(error instanceof UnreadableDumpError)) throw error;
        reason = error.message;
      }
    }
    if (!this.unreadableDumpSeen) {
      this.unreadableDumpSeen = true;
      this.logger.warn(MESSAGES.unreadableDump(reason));
    }
    const entries = await this.call(() => this.onShard(shard, (target, done) => target.hgetall(shard.batch, done)));
    return batchRowsOf({ entries: entries as Record<string, string> }, counters, numericIds);
  }

  /** Returns false when the batch had already been acknowledged (by a flusher that took over). */
  async ack(
    shard: ShardKeys,
    batchId: string,
    token: string,
    release: boolean,
    counters: string[],
    missingEncodedIds: string[],
  ): Promise<boolean> {
    const keys = [shard.batch, shard.lease, shard.generation, shard.dirty, shard.pending];
    const args = [shard.rowPrefix, batchId, token, release ? '1' : '0', counters.length, ...counters, ...missingEncodedIds];
    const reply = await this.call(() => this.onShard(shard, (target, done) => target.nestjsCounterAck(...keys, ...args, done)));
    return Number(reply) === 1;
  }

  /**
   * Takes a claimed batch's changes of counters this instance does not know out of it, for an instance
   * that knows them (see give-back.script.ts). Returns false when the batch or the lease is no longer
   * this flusher's: it must then not write the batch. On a cluster it waits for the replicas, as a claim
   * does: a replica promoted without the give-back would hold those changes in a batch the ledger has,
   * which a recovering flusher acknowledges, and they would be lost.
   */
  async giveBack(shard: ShardKeys, batchId: string, token: string, unknownDeltas: string[]): Promise<boolean> {
    const reply = await this.call(async () => {
      const given = await this.onShard(shard, (target, done) =>
        target.nestjsCounterGiveBack(shard.batch, shard.unknown, shard.lease, batchId, token, this.rowTtlSeconds, ...unknownDeltas, done),
      );
      if (Number(given) === 1) await this.awaitReplicas(shard);
      return given;
    });
    return Number(reply) === 1;
  }

  async release(shard: ShardKeys, token: string): Promise<void> {
    await this.call(() => this.onShard(shard, (target, done) => target.nestjsCounterRelease(shard.lease, token, done)));
  }

  /**
   * What each shard has waiting for the database: one script call per slot (one in all on a single
   * Redis, up to MAX_SHARDS_PER_STATUS_CALL shards), one round trip per node.
   */
  async backlog(shards: ShardKeys[]): Promise<ShardBacklog[]> {
    const requests = shards.map((shard) => ({ shard }));
    const calls = this.callsBySlot(requests).flatMap((indexes) => chunks(indexes, MAX_SHARDS_PER_STATUS_CALL));
    const replies = await this.runPerCall(requests, calls, (target, indexes) => {
      const keys = indexes.flatMap((index) => [shards[index].dirty, shards[index].batch, shards[index].generation]);
      return target.nestjsCounterStatus(keys.length, ...keys);
    });
    const backlog: ShardBacklog[] = new Array(shards.length);
    calls.forEach((indexes, call) => {
      const [now, ...lines] = String(replies[call]).split('\n');
      indexes.forEach((index, line) => {
        const [dirtyRows, dirtySince, batchRows, batchSince, generation] = lines[line].split(',');
        const since = [dirtySince, batchSince].filter((value) => value !== '').map(Number);
        backlog[index] = {
          dirtyRows: Number(dirtyRows),
          batchRows: batchRows === '' ? 0 : Number(batchRows),
          oldestAgeMs: since.length === 0 ? null : Math.max(0, Number(now) - Math.min(...since)),
          generation: generation === '' ? null : Number(generation),
        };
      });
    });
    return backlog;
  }

  /**
   * Creates the shards' generation keys where missing. They never expire, so a later claim that finds
   * one missing knows Redis lost that shard's data.
   */
  async markShards(shards: ShardKeys[]): Promise<void> {
    await this.runPerShard(
      shards.map((shard) => ({ shard })),
      (target, { shard }) => target.set(shard.generation, '0', 'NX'),
    );
  }

  /**
   * A call on one shard, sent with the others made in the same turn of the event loop: one pipeline per
   * node. A flush claims the shards of a transaction at once, and acknowledges them at once, so each
   * takes one write and one round trip per node instead of one per shard.
   */
  private onShard(shard: ShardKeys, send: ShardCall['send']): Promise<unknown> {
    return this.shardCalls.add({ shard, send });
  }

  private async sendShardCalls(queued: Queued<ShardCall, unknown>[]): Promise<void> {
    const requests = queued.map(({ request }) => request);
    const settle =
      (index: number): ReplyCallback =>
      (error, reply) =>
        error ? queued[index].reject(error) : queued[index].resolve(reply);
    // On a single Redis each call is settled as its reply arrives, not when the round trip's last one
    // does: the claims of two flush workers sent in one turn took 8-10 ms together, and the first
    // worker's transaction waited for the second's claims (scratch copy of the SQLite flush bench). A
    // cluster pipeline sends again what a node redirects: there a call is settled from its results.
    const early = isCluster(this.client) ? undefined : settle;
    const settled = await this.sendPerNode(
      requests,
      requests.map((_, index) => [index]),
      (target, [index]) => requests[index].send(target, early?.(index) ?? ignoreReply),
    );
    // A call settled early stays so; this settles the rest (a pipeline that failed as a whole, a cluster's).
    settled.forEach(([error, reply], index) => settle(index)(error, reply));
  }

  /** One script call per shard, in one pipeline per node (see `runPerCall`). */
  private runPerShard<T extends { shard: ShardKeys }>(
    requests: T[],
    send: (target: CallTarget, request: T) => unknown,
  ): Promise<unknown[]> {
    return this.runPerCall(
      requests,
      requests.map((_, index) => [index]),
      (target, [index]) => send(target, requests[index]),
    );
  }

  /**
   * Requests one script call can serve together: all of them on a single Redis; on a cluster those of
   * one slot (a script's keys must share one).
   */
  private callsBySlot(requests: Array<{ shard: ShardKeys }>): number[][] {
    const indexes = requests.map((_, index) => index);
    if (!isCluster(this.client)) return [indexes];
    return [...groupBy(indexes, (index) => requests[index].shard.slot).values()];
  }

  /**
   * Shards' row requests per script call: those one call can serve together (`callsBySlot`), whole
   * shards at a time, at most MAX_ROWS_PER_CALL rows per call (a larger shard goes alone).
   */
  private rowCallsBySlot(requests: Array<{ shard: ShardKeys; encodedIds: string[] }>): number[][] {
    return this.callsBySlot(requests).flatMap((indexes) => {
      const calls: number[][] = [];
      let rows = Number.POSITIVE_INFINITY;
      for (const index of indexes) {
        const size = requests[index].encodedIds.length;
        if (rows + size > MAX_ROWS_PER_CALL) {
          calls.push([]);
          rows = 0;
        }
        calls[calls.length - 1].push(index);
        rows += size;
      }
      return calls;
    });
  }

  /**
   * Sends one script call per entry of `calls` (indexes of requests of one slot), in one pipeline per
   * node (see `sendPerNode`). Returns the replies in the order of `calls`; the first error is thrown.
   */
  private async runPerCall<T extends { shard: ShardKeys }>(
    requests: T[],
    calls: number[][],
    send: (target: CallTarget, indexes: number[]) => unknown,
  ): Promise<unknown[]> {
    if (calls.length === 0) return [];
    return this.call(async () => unwrap(await this.sendPerNode(requests, calls, send)));
  }

  /**
   * Sends one script call per entry of `calls`, in one pipeline per node: a single Redis takes them all
   * in one round trip, a cluster one round trip per node touched (a cluster pipeline must stay on one
   * node). Returns each call's error or reply, in the order of `calls`.
   */
  private async sendPerNode<T extends { shard: ShardKeys }>(
    requests: T[],
    calls: number[][],
    send: (target: CallTarget, indexes: number[]) => unknown,
  ): Promise<Array<[Error | null, unknown]>> {
    // A lone call goes straight to the client (on a cluster ioredis routes it): a pipeline costs more to
    // build than the call itself (a 100-row page read: about 100 µs of CPU more, measured alone).
    if (calls.length === 1) return [await settle(send(this.client, calls[0]) as Promise<unknown>)];
    const settled: Array<[Error | null, unknown]> = new Array(calls.length);
    // Before the slot map is known, each call goes on its own; ioredis routes it.
    const nodeOf = (call: number): string => {
      const slot = requests[calls[call][0]].shard.slot;
      return isCluster(this.client) ? (this.client.slots[slot]?.join(',') ?? `slot:${slot}`) : 'server';
    };
    const byNode = groupBy(
      calls.map((_, call) => call),
      nodeOf,
    );
    await Promise.all(
      [...byNode.values()].map(async (callsOfNode) => {
        const pipeline = this.client.pipeline() as ScriptPipeline;
        for (const call of callsOfNode) send(pipeline, calls[call]);
        try {
          ((await pipeline.exec()) ?? []).forEach((result, i) => (settled[callsOfNode[i]] = result));
        } catch (error) {
          for (const call of callsOfNode) settled[call] = [error as Error, undefined];
        }
      }),
    );
    return settled;
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

  /**
   * Sends changes queued together (at most MAX_CHANGES_PER_CALL): one script call per slot, a row's
   * changes next to each other. A failed call fails only its own changes.
   */
  private async sendIncrements(queued: Queued<IncrementRequest, IncrementOutcome>[]): Promise<void> {
    if (!SENDABLE_STATES.has(this.client.status)) {
      const error = this.notSendable();
      for (const { reject } of queued) reject(error);
      return;
    }
    // A lone change (the common case at low load) goes straight to the client: no grouping, no
    // pipeline, and the fewest promises between the reply and the caller.
    if (queued.length === 1) {
      (this.sendOne(this.client, queued[0].request) as Promise<unknown>).then(
        (reply) => settleChanges(queued, null, reply),
        (error: Error) => settleChanges(queued, error, undefined),
      );
      return;
    }
    const requests = queued.map(({ request }) => request);
    const rowOf = (index: number) => requests[index].shard.row(requests[index].encodedId);
    // A row's changes side by side: the script reads each row once and answers in this order.
    const calls = this.callsBySlot(requests).flatMap((indexes) =>
      chunks([...groupBy(indexes, rowOf).values()].flat(), MAX_CHANGES_PER_CALL),
    );
    const send = (target: CallTarget, indexes: number[]) => {
      if (indexes.length === 1) return this.sendOne(target, requests[indexes[0]]);
      const keys: string[] = [];
      const args: Arg[] = [this.rowTtlSeconds];
      for (let first = 0; first < indexes.length; ) {
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
    };
    const settled = await this.sendPerNode(requests, calls, send);
    calls.forEach((indexes, call) => settleChanges(indexes.map((index) => queued[index]), ...settled[call]));
  }

  /**
   * On a cluster, waits until the replicas of the shard's master have every write this connection sent
   * it, the claim (or give-back) included. Sent only after a claim that holds a batch and after a
   * give-back: a WAIT holds up everything queued behind it on the connection, so empty shards must not
   * pay for it.
   */
  private async awaitReplicas(shard: ShardKeys): Promise<void> {
    if (!isCluster(this.client)) return;
    const [master, ...replicas] = this.client.slots[shard.slot] ?? [];
    if (!master || replicas.length === 0) return;
    // WAIT names no key, so the cluster would route it anywhere: send it on the master's own connection.
    const connection = this.client.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === master);
    if (!connection) throw new CounterReplicationLagError(MESSAGES.claimNotReplicated(0, replicas.length, 0));
    const confirmed = await connection.wait(replicas.length, this.replicaWaitMs);
    if (confirmed < replicas.length) {
      throw new CounterReplicationLagError(MESSAGES.claimNotReplicated(confirmed, replicas.length, this.replicaWaitMs));
    }
  }

  private async call<T>(operation: () => Promise<T>): Promise<T> {
    if (!SENDABLE_STATES.has(this.client.status)) throw this.notSendable();
    try {
      return await operation();
    } catch (error) {
      throw toStoreError(error);
    }
  }

  private notSendable(): CounterStoreUnavailableError {
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(`connection is ${this.client.status}`, false));
  }
}

/**
 * What a failed command means to the caller: an outage (CounterStoreUnavailableError) or, for a reply
 * with which Redis refused to run a command, a bug to surface as it is.
 */
function toStoreError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof CounterReplicationLagError) return error;
  if (error.name === 'ReplyError' && TRANSIENT_REFUSAL.test(error.message)) {
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(error.message, false), { cause: error });
  }
  if (error.name !== 'ReplyError') {
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(error.message, true), { cause: error });
  }
  return error;
}

function sameItems(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((item, index) => item === b[index]));
}

/** `items` cut into runs of at most `size`. */
function chunks<T>(items: T[], size: number): T[][] {
  const runs: T[][] = [];
  for (let at = 0; at < items.length; at += size) runs.push(items.slice(at, at + size));
  return runs;
}

/** A reply nobody waits for: the call is settled from the pipeline's results instead. */
const ignoreReply: ReplyCallback = () => undefined;

/** A command's error or reply, as a pipeline gives them. */
function settle(reply: Promise<unknown>): Promise<[Error | null, unknown]> {
  return reply.then(
    (value) => [null, value],
    (error: Error) => [error, undefined],
  );
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
function settleChanges(changes: Queued<IncrementRequest, IncrementOutcome>[], error: Error | null, reply: unknown): void {
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

/** The replies of an executed pipeline; the first command error is thrown. */
function unwrap(results: Array<[Error | null, unknown]>): unknown[] {
  return results.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}
