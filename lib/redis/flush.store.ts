import { Logger } from '@nestjs/common';
import { chunks } from '../collections.js';
import { MAX_SHARDS_PER_STATUS_CALL } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { NO_OP_INSTRUMENTS, type CounterInstruments } from '../metrics/counter.instruments.js';
import { readClaimedBatch, type ClaimedRows } from './claim/claimed-batch.reader.js';
import { UnreadableDumpError } from './claim/dumped-hash.parser.js';
import type { ShardKeys } from './counter.keys.js';
import type { ScriptRunner } from './script.runner.js';

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
  /** Whether the entity's ids are integers (read as numbers from the batch). */
  numericIds: boolean;
  token: string;
  leaseMs: number;
  batchId: string;
  limit: number;
}

/**
 * `dataLost`: the shard's generation key was gone (Redis lost the shard's data) and was made again.
 * `generation`: the shard's generation when claimed; it only grows unless Redis loses the shard's data.
 */
export type ClaimOutcome = { dataLost: boolean; generation: number } & (
  | { kind: 'busy' }
  | { kind: 'empty' }
  | ({
      kind: 'batch';
      /** A batch left behind by a flusher that did not acknowledge it. */
      recovered: boolean;
      /** '' when every change netted to zero: there is no batch to write or acknowledge. */
      batchId: string;
      /** Rows of the shard still dirty after this claim. */
      moreRows: number;
    } & ClaimedRows)
);

/** The claim script's reply (claim.lua.ts), its strings as Buffers: kind, lost, generation, batch id, more, dump. */
type ClaimReply = Array<Buffer | number | null>;

const NO_ROWS: ClaimedRows = { rows: { encodedIds: [], deltas: [] }, unknown: [] };

/**
 * The flush's side of Redis: each shard's backlog, and the claim, acknowledgement and lease of its
 * batches. Calls on single shards made in one turn of the event loop go together (`ScriptRunner.onShard`).
 */
export class FlushStore {
  private readonly logger = new Logger('CounterFlush');
  /** Whether a claim's batch could not be read from its DUMP yet (logged once). */
  private unreadableDumpSeen = false;

  /**
   * @param instruments counts the batches read with `HGETALL` instead of their `DUMP`.
   */
  constructor(
    private readonly runner: ScriptRunner,
    private readonly instruments: CounterInstruments = NO_OP_INSTRUMENTS,
  ) {}

  /** What each shard has waiting (see status.lua.ts): one call per slot, one round trip per node. */
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
   * Makes the shards' generation keys where missing: they never expire, so a missing one means lost data.
   * Returns, per shard, whether its key was made here (it was missing).
   */
  async markShards(shards: ShardKeys[]): Promise<boolean[]> {
    const replies = await this.runner.runPerShard(
      shards.map((shard) => ({ shard })),
      (target, { shard }) => target.set(shard.generation, '0', 'NX'),
    );
    return replies.map((reply) => reply !== null);
  }

  /**
   * Takes the shard's lease and claims a batch, or the batch left behind (see claim.lua.ts). On a cluster
   * a claim that holds a batch is followed by `WAIT` for the replicas of its node: a replica promoted
   * without the claim would still hold the changes as pending and flush them a second time. If they do
   * not confirm in time the batch stays claimed, and a later flush finds it left behind.
   */
  async claim(shard: ShardKeys, request: ClaimRequest): Promise<ClaimOutcome> {
    const reply = await this.runner.call(() => this.sendClaim(shard, request));
    const kind = String(reply[0]);
    const outcome = { dataLost: Number(reply[1]) === 1, generation: Number(String(reply[2])) };
    if (kind === 'busy' || kind === 'empty') return { ...outcome, kind };
    const batchId = String(reply[3]);
    const payload = (reply[5] as Buffer | null | undefined) ?? null;
    const claimed = batchId === '' ? NO_ROWS : await this.claimedRows(shard, payload, request);
    const moreRows = Number(String(reply[4]));
    return { ...outcome, kind: 'batch', recovered: kind === 'pending', batchId, moreRows, ...claimed };
  }

  /** Acknowledges a written batch (see ack.lua.ts); false when another flusher acknowledged it already. */
  async ack(
    shard: ShardKeys,
    batchId: string,
    token: string,
    release: boolean,
    counters: string[],
    missingEncodedIds: string[],
  ): Promise<boolean> {
    const keys = [shard.batch, shard.lease, shard.generation, shard.dirty, shard.pending];
    keys.push(...missingEncodedIds.map((encodedId) => shard.row(encodedId)));
    const args = [batchId, token, release ? '1' : '0', counters.length, ...counters, ...missingEncodedIds];
    const reply = await this.runner.callOnShard(shard, (target, done) =>
      target.nestjsCounterAck(keys.length, ...keys, ...args, done),
    );
    return Number(reply) === 1;
  }

  /**
   * Forgets the rows of a batch whose transaction has ended, unless it is still the shard's batch in flight
   * (see forget.lua.ts): `kept` then, `forgotten` when the rows were deleted (they load again from the
   * database), `lost` when the shard's generation key was missing too (Redis lost the shard's data).
   */
  async forget(shard: ShardKeys, batchId: string, encodedIds: string[]): Promise<'kept' | 'forgotten' | 'lost'> {
    const keys = [shard.batch, shard.generation, ...encodedIds.map((encodedId) => shard.row(encodedId))];
    const reply = Number(
      await this.runner.callOnShard(shard, (target, done) =>
        target.nestjsCounterForget(keys.length, ...keys, batchId, done),
      ),
    );
    return reply === 0 ? 'kept' : reply === 1 ? 'forgotten' : 'lost';
  }

  /**
   * Takes a claimed batch's changes of counters this instance does not know out of it (see
   * give-back.lua.ts). False when the batch or the lease is no longer this flusher's: it must then not
   * write the batch. On a cluster it waits for the replicas, as a claim does: a replica promoted without
   * the give-back would hold those changes in a batch the ledger has, and they would be lost.
   */
  async giveBack(shard: ShardKeys, batchId: string, token: string, unknownDeltas: string[]): Promise<boolean> {
    const keys = [shard.batch, shard.unknown, shard.lease];
    const reply = await this.runner.call(async () => {
      const given = await this.runner.onShard(shard, (target, done) =>
        target.nestjsCounterGiveBack(keys.length, ...keys, batchId, token, ...unknownDeltas, done),
      );
      if (Number(given) === 1) await this.runner.awaitReplicas(shard);
      return given;
    });
    return Number(reply) === 1;
  }

  /**
   * Extends the leases of `shards` that `token` still holds by `leaseMs` (see renew.lua.ts): one call
   * per slot, one round trip per node. Returns, per shard, whether its lease was still the caller's.
   */
  async renew(shards: ShardKeys[], token: string, leaseMs: number): Promise<boolean[]> {
    const requests = shards.map((shard) => ({ shard }));
    const calls = this.runner.callsBySlot(requests).flatMap((indexes) => chunks(indexes, MAX_SHARDS_PER_STATUS_CALL));
    const replies = await this.runner.runPerCall(requests, calls, (target, indexes) => {
      const leases = indexes.map((index) => shards[index].lease);
      return target.nestjsCounterRenew(leases.length, ...leases, token, leaseMs);
    });
    const renewed: boolean[] = new Array(shards.length);
    calls.forEach((indexes, call) => {
      const flags = String(replies[call]);
      indexes.forEach((index, at) => (renewed[index] = flags[at] === '1'));
    });
    return renewed;
  }

  async release(shard: ShardKeys, token: string): Promise<void> {
    await this.runner.callOnShard(shard, (target, done) => target.nestjsCounterRelease(1, shard.lease, token, done));
  }

  /** The claim script's reply, once the replicas have it where a batch was claimed (see `claim`). */
  private async sendClaim(shard: ShardKeys, request: ClaimRequest): Promise<ClaimReply> {
    const keys = [shard.dirty, shard.batch, shard.lease, shard.generation, shard.pending, shard.unknown];
    const args = [request.token, request.leaseMs, request.batchId, request.limit, Date.now(), ...request.counters];
    const reply = (await this.runner.onShard(shard, (target, done) =>
      target.nestjsCounterClaimBuffer(keys.length, ...keys, ...args, done),
    )) as ClaimReply;
    const kind = String(reply[0]);
    if ((kind === 'claimed' || kind === 'pending') && String(reply[3]) !== '') await this.runner.awaitReplicas(shard);
    return reply;
  }

  /**
   * A claimed batch's rows from its `DUMP`; from `HGETALL`, which costs more, where Redis refused the
   * `DUMP` (null: an ACL) or gave a payload this library does not read (logged once).
   */
  private async claimedRows(
    shard: ShardKeys,
    payload: Buffer | null,
    { counters, numericIds }: ClaimRequest,
  ): Promise<ClaimedRows> {
    let reason = MESSAGES.dumpRefused();
    if (payload) {
      try {
        return readClaimedBatch({ payload }, counters, numericIds);
      } catch (error) {
        if (!(error instanceof UnreadableDumpError)) throw error;
        reason = error.message;
      }
    }
    this.instruments.dumpFallback(payload ? 'unreadable' : 'refused');
    if (!this.unreadableDumpSeen) {
      this.unreadableDumpSeen = true;
      this.logger.warn(MESSAGES.unreadableDump(reason));
    }
    const entries = await this.runner.callOnShard(shard, (target, done) => target.hgetall(shard.batch, done));
    return readClaimedBatch({ entries: entries as Record<string, string> }, counters, numericIds);
  }
}
