import { Logger } from '@nestjs/common';
import { inRequestOrder } from '../collections.js';
import { MAX_SHARDS_PER_STATUS_CALL } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { NO_OP_INSTRUMENTS, type CounterInstruments } from '../metrics/counter.instruments.js';
import { readClaimedBatch, type ClaimedRows } from './claim/claimed-batch.reader.js';
import { UnreadableDumpError } from './claim/dumped-hash.parser.js';
import type { ShardKeys } from './counter.keys.js';
import { REPLY } from './script-commands.js';
import { scriptCall, type RedisCall, type ScriptRunner } from './script.runner.js';

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
  /** The counters to claim: the entity's, as the claim script takes them (CounterField.scriptName). */
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

/** The claim script's reply (claim.lua.ts), read from its strings as Buffers. */
interface ClaimReply {
  kind: (typeof REPLY.claim)[keyof typeof REPLY.claim];
  dataLost: boolean;
  generation: number;
  /** '' when there is no batch to write. */
  batchId: string;
  moreRows: number;
  /** The batch hash's DUMP; null where Redis refused it. */
  dump: Buffer | null;
}

const NO_ROWS: ClaimedRows = { rows: { encodedIds: [], deltas: [] }, unknown: [] };

/**
 * The flush's side of Redis: each shard's backlog, and the claim, acknowledgement and lease of its
 * batches. Calls on single shards made in one turn of the event loop go together (`ScriptRunner.sendInTurn`).
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
    const groups = this.runner.groupsForCalls(requests, slotOf, MAX_SHARDS_PER_STATUS_CALL);
    const calls = groups.map((group) => {
      const keys = group.flatMap(({ shard }) => [shard.dirty, shard.batch, shard.generation]);
      return scriptCall('nestjsCounterStatus', group[0].shard.slot, keys, [], (reply) => {
        const [now, ...lines] = String(reply).split('\n');
        return lines.map((line): ShardBacklog => {
          const [dirtyRows, dirtySince, batchRows, batchSince, generation] = line.split(',');
          const since = [dirtySince, batchSince].filter((value) => value !== '').map(Number);
          return {
            dirtyRows: Number(dirtyRows),
            batchRows: batchRows === '' ? 0 : Number(batchRows),
            oldestAgeMs: since.length === 0 ? null : Math.max(0, Number(now) - Math.min(...since)),
            generation: generation === '' ? null : Number(generation),
          };
        });
      });
    });
    return inRequestOrder(requests, groups, await Promise.all(this.runner.sendNow(calls)));
  }

  /**
   * Makes the shards' generation keys where missing: they never expire, so a missing one means lost data.
   * Returns, per shard, whether its key was made here (it was missing).
   */
  async markShards(shards: ShardKeys[]): Promise<boolean[]> {
    const calls = shards.map((shard): RedisCall<boolean> => ({
      slot: shard.slot,
      command: 'set',
      args: [shard.generation, '0', 'NX'],
      read: (reply) => reply !== null,
    }));
    return Promise.all(this.runner.sendNow(calls));
  }

  /**
   * Takes the shard's lease and claims a batch, or the batch left behind (see claim.lua.ts). On a cluster
   * a claim that holds a batch is followed by `WAIT` for the replicas of its node: a replica promoted
   * without the claim would still hold the changes as pending and flush them a second time. Where the
   * servers have `WAITAOF`, it also waits for the claim to be fsynced to their AOFs, for the same reason
   * with a server restarted from its AOF. If they do not confirm in time the batch stays claimed, and a
   * later flush finds it left behind.
   */
  async claim(shard: ShardKeys, request: ClaimRequest): Promise<ClaimOutcome> {
    const keys = [shard.dirty, shard.batch, shard.lease, shard.generation, shard.pending, shard.unknown];
    // The lease outlasts the wait for the AOFs that follows a claim holding a batch.
    const leaseMs = request.leaseMs + this.runner.waitAfterClaimMs;
    const args = [request.token, leaseMs, request.batchId, request.limit, Date.now(), ...request.counters];
    const call = scriptCall('nestjsCounterClaimBuffer', shard.slot, keys, args, readClaimReply);
    call.replicate = ({ kind, batchId }) =>
      (kind === REPLY.claim.claimed || kind === REPLY.claim.leftBehind) && batchId !== '';
    call.mark = shard.aofMark;
    const { kind, dataLost, generation, batchId, moreRows, dump } = await this.runner.sendInTurn(call);
    if (kind === REPLY.claim.busy || kind === REPLY.claim.empty) return { dataLost, generation, kind };
    const claimed = batchId === '' ? NO_ROWS : await this.claimedRows(shard, dump, request);
    const recovered = kind === REPLY.claim.leftBehind;
    return { dataLost, generation, kind: 'batch', recovered, batchId, moreRows, ...claimed };
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
    return this.runner.sendInTurn(
      scriptCall('nestjsCounterAck', shard.slot, keys, args, (reply) => Number(reply) === REPLY.ack.acknowledged),
    );
  }

  /**
   * Forgets the rows of a batch whose transaction has ended, unless it is still the shard's batch in flight
   * (see forget.lua.ts): `kept` then, `forgotten` when the rows were deleted (they load again from the
   * database), `lost` when the shard's generation key was missing too (Redis lost the shard's data).
   */
  async forget(shard: ShardKeys, batchId: string, encodedIds: string[]): Promise<'kept' | 'forgotten' | 'lost'> {
    const keys = [shard.batch, shard.generation, ...encodedIds.map((encodedId) => shard.row(encodedId))];
    return this.runner.sendInTurn(
      scriptCall('nestjsCounterForget', shard.slot, keys, [batchId], (reply) => {
        const code = Number(reply);
        return code === REPLY.forget.kept ? 'kept' : code === REPLY.forget.forgotten ? 'forgotten' : 'lost';
      }),
    );
  }

  /**
   * Takes a claimed batch's changes of counters this instance does not know out of it (see
   * give-back.lua.ts). False when the batch or the lease is no longer this flusher's: it must then not
   * write the batch. It waits for the replicas and the AOFs, as a claim does: a replica promoted, or a
   * server restarted from an AOF, without the give-back would hold those changes in a batch the ledger
   * has, and they would be lost.
   */
  async giveBack(shard: ShardKeys, batchId: string, token: string, unknownDeltas: string[]): Promise<boolean> {
    const keys = [shard.batch, shard.unknown, shard.lease];
    const args = [batchId, token, ...unknownDeltas];
    const call = scriptCall('nestjsCounterGiveBack', shard.slot, keys, args, (reply) => {
      return Number(reply) === REPLY.giveBack.givenBack;
    });
    call.replicate = (givenBack) => givenBack;
    call.mark = shard.aofMark;
    return this.runner.sendInTurn(call);
  }

  /**
   * Extends the leases of `shards` that `token` still holds by `leaseMs` (see renew.lua.ts): one call
   * per slot, one round trip per node. Returns, per shard, whether its lease was still the caller's.
   */
  async renew(shards: ShardKeys[], token: string, leaseMs: number): Promise<boolean[]> {
    const requests = shards.map((shard) => ({ shard }));
    const groups = this.runner.groupsForCalls(requests, slotOf, MAX_SHARDS_PER_STATUS_CALL);
    const calls = groups.map((group) => {
      const leases = group.map(({ shard }) => shard.lease);
      return scriptCall('nestjsCounterRenew', group[0].shard.slot, leases, [token, leaseMs], (reply) => {
        const flags = String(reply);
        return group.map((_, at) => flags[at] === REPLY.renew.renewed);
      });
    });
    return inRequestOrder(requests, groups, await Promise.all(this.runner.sendNow(calls)));
  }

  async release(shard: ShardKeys, token: string): Promise<void> {
    await this.runner.sendInTurn(
      scriptCall('nestjsCounterRelease', shard.slot, [shard.lease], [token], () => undefined),
    );
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
    const entries = await this.runner.sendInTurn({
      slot: shard.slot,
      command: 'hgetall',
      args: [shard.batch],
      read: (reply) => reply as Record<string, string>,
    });
    return readClaimedBatch({ entries }, counters, numericIds);
  }
}

/** The claim script's reply: kind, lost, generation, batch id, more, dump. */
function readClaimReply(reply: unknown): ClaimReply {
  const [kind, lost, generation, batchId, more, dump] = reply as Array<Buffer | number | null | undefined>;
  return {
    kind: String(kind) as ClaimReply['kind'],
    dataLost: Number(lost) === 1,
    generation: Number(String(generation)),
    batchId: String(batchId),
    moreRows: Number(String(more)),
    dump: (dump as Buffer | null | undefined) ?? null,
  };
}

function slotOf(request: { shard: ShardKeys }): number {
  return request.shard.slot;
}
