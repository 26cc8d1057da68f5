import { CounterReplicationLagError } from '../exceptions/counter-replication-lag.error.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import { MESSAGES } from '../counter.messages.js';
import { MAX_ROWS_PER_CALL } from '../counter.constants.js';
import { groupBy } from '../collections.js';
import type { ShardKeys } from './counter.keys.js';
import { isCluster, type RedisClient } from './counter-redis.handle.js';
import {
  withScripts,
  type CallTarget,
  type ReplyCallback,
  type ScriptClient,
  type ScriptPipeline,
} from './script-commands.js';
import { TurnBatcher, type Queued } from './turn.batcher.js';

/**
 * States in which a command can be sent now: connected, or a lazy client's first command (which
 * connects it). In any other state it would be refused or queued, so it is refused before sending.
 */
const SENDABLE_STATES = new Set(['ready', 'wait']);

/**
 * Replies with which Redis refuses a command without running it, while a cluster moves slots or fails
 * over: an outage to wait out, not a bug.
 */
const TRANSIENT_REFUSAL = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN|LOADING|MASTERDOWN|READONLY)\b/;

/**
 * The reply of a Redis at its `maxmemory` that cannot evict (`noeviction`): it refuses a script at its
 * first write, so the refused call wrote nothing.
 */
const OUT_OF_MEMORY = /^OOM\b/;

/**
 * Errors with which ioredis refuses a command without writing it: its socket is no longer writable (it
 * just broke), or a cluster knows no node for it yet. Nothing reached Redis.
 */
const REFUSED_UNSENT = /^(Stream isn't writeable|Cluster isn't ready) and enableOfflineQueue options is false/;

/** A call on one shard's keys (see `ScriptRunner.onShard`): made on `target`, its reply handed to `done`. */
interface ShardCall {
  shard: ShardKeys;
  send(target: CallTarget, done: ReplyCallback): unknown;
}

/**
 * Sends the counter scripts to a single Redis or a cluster: the calls of one slot together, one
 * pipeline per node, every failure turned into what it means to the caller (see `toStoreError`).
 */
export class ScriptRunner {
  readonly client: ScriptClient;
  /** Flush calls of single shards (claims, acks, releases): see `onShard`. */
  private readonly shardCalls = new TurnBatcher<ShardCall, unknown>(Number.POSITIVE_INFINITY, 0, (queued) =>
    this.sendShardCalls(queued),
  );

  /** @param replicaWaitMs on a cluster, how long `awaitReplicas` waits for a master's replicas. */
  constructor(
    client: RedisClient,
    private readonly replicaWaitMs: number,
  ) {
    this.client = withScripts(client);
  }

  get sendable(): boolean {
    return SENDABLE_STATES.has(this.client.status);
  }

  notSendable(): CounterStoreUnavailableError {
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(`connection is ${this.client.status}`, false));
  }

  /** Runs `operation` if a command can be sent now; its failure as `toStoreError` gives it. */
  async call<T>(operation: () => Promise<T>): Promise<T> {
    if (!this.sendable) throw this.notSendable();
    try {
      return await operation();
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * A call on one shard, sent with the others made in the same turn of the event loop: one pipeline per
   * node. A flush claims the shards of a transaction at once, and acknowledges them at once, so each
   * takes one write and one round trip per node instead of one per shard.
   */
  onShard(shard: ShardKeys, send: ShardCall['send']): Promise<unknown> {
    return this.shardCalls.add({ shard, send });
  }

  /** `onShard`, run as `call` runs an operation. */
  callOnShard(shard: ShardKeys, send: ShardCall['send']): Promise<unknown> {
    return this.call(() => this.onShard(shard, send));
  }

  /** One script call per shard, in one pipeline per node (see `runPerCall`). */
  runPerShard<T extends { shard: ShardKeys }>(
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
   * Sends one script call per entry of `calls` (indexes of requests of one slot), in one pipeline per
   * node (see `sendPerNode`). Returns the replies in the order of `calls`; the first error is thrown.
   */
  async runPerCall<T extends { shard: ShardKeys }>(
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
  async sendPerNode<T extends { shard: ShardKeys }>(
    requests: T[],
    calls: number[][],
    send: (target: CallTarget, indexes: number[]) => unknown,
  ): Promise<Array<[Error | null, unknown]>> {
    // A lone call goes straight to the client (on a cluster ioredis routes it): a pipeline costs more to
    // build than the call itself.
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

  /**
   * Requests one script call can serve together: all of them on a single Redis; on a cluster those of
   * one slot (a script's keys must share one).
   */
  callsBySlot(requests: Array<{ shard: ShardKeys }>): number[][] {
    const indexes = requests.map((_, index) => index);
    if (!isCluster(this.client)) return [indexes];
    return [...groupBy(indexes, (index) => requests[index].shard.slot).values()];
  }

  /**
   * Shards' row requests per script call: those one call can serve together (`callsBySlot`), whole
   * shards at a time, at most MAX_ROWS_PER_CALL rows per call (a larger shard goes alone).
   */
  rowCallsBySlot(requests: Array<{ shard: ShardKeys; encodedIds: string[] }>): number[][] {
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
   * On a cluster, waits until the replicas of the shard's master have every write this connection sent
   * it, the claim (or give-back) included. Sent only after a claim that holds a batch and after a
   * give-back: a WAIT holds up everything queued behind it on the connection, so empty shards must not
   * pay for it.
   */
  async awaitReplicas(shard: ShardKeys): Promise<void> {
    if (!isCluster(this.client)) return;
    const [master, ...replicas] = this.client.slots[shard.slot] ?? [];
    if (!master || replicas.length === 0) return;
    // WAIT names no key, so the cluster would route it anywhere: send it on the master's own connection.
    const connection = this.client
      .nodes('master')
      .find((node) => `${node.options.host}:${node.options.port}` === master);
    if (!connection) throw new CounterReplicationLagError(MESSAGES.claimNotReplicated(0, replicas.length, 0));
    const confirmed = await connection.wait(replicas.length, this.replicaWaitMs);
    if (confirmed < replicas.length) {
      throw new CounterReplicationLagError(MESSAGES.claimNotReplicated(confirmed, replicas.length, this.replicaWaitMs));
    }
  }

  private async sendShardCalls(queued: Queued<ShardCall, unknown>[]): Promise<void> {
    const requests = queued.map(({ request }) => request);
    const settleCall =
      (index: number): ReplyCallback =>
      (error, reply) =>
        error ? queued[index].reject(error) : queued[index].resolve(reply);
    // On a single Redis each call is settled as its reply arrives, not with the round trip's last one, so a
    // flush worker's transaction does not wait for another worker's claims sent alongside. A cluster
    // pipeline sends again what a node redirects: there a call is settled from its results.
    const early = isCluster(this.client) ? undefined : settleCall;
    const settled = await this.sendPerNode(
      requests,
      requests.map((_, index) => [index]),
      (target, [index]) => requests[index].send(target, early?.(index) ?? ignoreReply),
    );
    // A call settled early stays so; this settles the rest (a pipeline that failed as a whole, a cluster's).
    settled.forEach(([error, reply], index) => settleCall(index)(error, reply));
  }
}

/**
 * What a failed command means to the caller: an outage (CounterStoreUnavailableError, a Redis out of
 * memory among them) or, for a reply with which Redis refused to run a command, a bug to surface as it is.
 */
export function toStoreError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof CounterReplicationLagError) return error;
  if (error.name === 'ReplyError' && OUT_OF_MEMORY.test(error.message)) {
    return new CounterStoreUnavailableError(MESSAGES.storeOutOfMemory(error.message), { cause: error });
  }
  if (error.name === 'ReplyError' && TRANSIENT_REFUSAL.test(error.message)) {
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(error.message, false), { cause: error });
  }
  if (error.name !== 'ReplyError') {
    const sent = !REFUSED_UNSENT.test(error.message);
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(error.message, sent), { cause: error });
  }
  return error;
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

/** The replies of an executed pipeline; the first command error is thrown. */
function unwrap(results: Array<[Error | null, unknown]>): unknown[] {
  return results.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}
