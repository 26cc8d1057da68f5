import { Logger } from '@nestjs/common';
import { MESSAGES } from '../counter.messages.js';
import { MAX_SHARDS_PER_STATUS_CALL } from '../counter.constants.js';
import { chunks } from '../collections.js';
import type { ShardKeys } from './keys.js';
import { keepStringPrototypeFast } from './fast-string-prototype.js';
import { batchRowsOf, NO_BATCH_ROWS, type ClaimedRows } from './batch-rows.js';
import { UnreadableDumpError } from './hash-dump.js';
import type { RedisClient } from './redis-connection.js';
import type { Arg } from './script-commands.js';
import { IncrementSender, type IncrementOutcome, type IncrementRequest } from './increment-sender.js';
import { ScriptRunner } from './script-runner.js';

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
  | ({
      kind: 'batch';
      recovered: boolean;
      batchId: string;
      /** Rows of the shard still dirty after this claim. */
      moreRows: number;
    } & ClaimedRows)
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

/**
 * The counter scripts' operations: each request turned into script calls (see ScriptRunner for how
 * they reach Redis) and each reply into a typed result.
 */
export class CounterStore {
  private readonly logger = new Logger('CounterStore');
  private readonly runner: ScriptRunner;
  private readonly increments: IncrementSender;
  /** Whether a claim's batch could not be read from its DUMP yet (logged once). */
  private unreadableDumpSeen = false;

  /**
   * @param replicaWaitMs on a cluster, how long a claim waits for the replicas of its node (see `claim`).
   * @param rowTtlSeconds how long a row stays cached after its seed or its first change since a claim.
   */
  constructor(
    client: RedisClient,
    replicaWaitMs: number,
    private readonly rowTtlSeconds: number,
  ) {
    // Here, when the application starts, rather than when this file loads: after every module that
    // could have taken String.prototype out of fast mode (ioredis among them) has loaded.
    keepStringPrototypeFast();
    this.runner = new ScriptRunner(client, replicaWaitMs);
    this.increments = new IncrementSender(this.runner, rowTtlSeconds);
  }

  /** Changes one counter of one row, sent with the others of the same turn (see IncrementSender). */
  increment(request: IncrementRequest): Promise<IncrementOutcome> {
    return this.increments.increment(request);
  }

  /**
   * Live values of rows grouped by shard: one script call for every shard on a single Redis, one per
   * slot on a cluster (each at most MAX_ROWS_PER_CALL rows), and one round trip per node either way.
   */
  async readRows(requests: ShardRowsRequest[]): Promise<ShardRowsResult[]> {
    const calls = this.runner.rowCallsBySlot(requests);
    const replies = await this.runner.runPerCall(requests, calls, (target, indexes) => {
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
          for (let counter = 0; counter < counts.length; counter++, at++)
            counts[counter] = values[at] === '' ? null : Number(values[at]);
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
    const calls = this.runner.rowCallsBySlot(requests);
    const replies = await this.runner.runPerCall(requests, calls, (target, indexes) => {
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
    const reply = await this.runner.call(() => this.sendClaim(shard, request));
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
    const claimed =
      batchId === '' ? NO_BATCH_ROWS : await this.claimedRows(shard, (reply[5] as Buffer | undefined) ?? null, request);
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
    const reply = (await this.runner.onShard(shard, (target, done) =>
      target.nestjsCounterClaimBuffer(...args, done),
    )) as ClaimReply;
    const kind = String(reply[0]);
    if ((kind === 'claimed' || kind === 'pending') && String(reply[3]) !== '') await this.runner.awaitReplicas(shard);
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
    const entries = await this.runner.callOnShard(shard, (target, done) => target.hgetall(shard.batch, done));
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
    const args = [
      shard.rowPrefix,
      batchId,
      token,
      release ? '1' : '0',
      counters.length,
      ...counters,
      ...missingEncodedIds,
    ];
    const reply = await this.runner.callOnShard(shard, (target, done) =>
      target.nestjsCounterAck(...keys, ...args, done),
    );
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
    const reply = await this.runner.call(async () => {
      const given = await this.runner.onShard(shard, (target, done) =>
        target.nestjsCounterGiveBack(
          shard.batch,
          shard.unknown,
          shard.lease,
          batchId,
          token,
          this.rowTtlSeconds,
          ...unknownDeltas,
          done,
        ),
      );
      if (Number(given) === 1) await this.runner.awaitReplicas(shard);
      return given;
    });
    return Number(reply) === 1;
  }

  async release(shard: ShardKeys, token: string): Promise<void> {
    await this.runner.callOnShard(shard, (target, done) => target.nestjsCounterRelease(shard.lease, token, done));
  }

  /**
   * What each shard has waiting for the database: one script call per slot (one in all on a single
   * Redis, up to MAX_SHARDS_PER_STATUS_CALL shards), one round trip per node.
   */
  async backlog(shards: ShardKeys[]): Promise<ShardBacklog[]> {
    const requests = shards.map((shard) => ({ shard }));
    const calls = this.runner.callsBySlot(requests).flatMap((indexes) => chunks(indexes, MAX_SHARDS_PER_STATUS_CALL));
    const replies = await this.runner.runPerCall(requests, calls, (target, indexes) => {
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
    await this.runner.runPerShard(
      shards.map((shard) => ({ shard })),
      (target, { shard }) => target.set(shard.generation, '0', 'NX'),
    );
  }
}

function sameItems(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((item, index) => item === b[index]));
}
