import { CounterReplicationLagError } from '../exceptions/counter-replication-lag.error.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import { MESSAGES } from '../counter.messages.js';
import { groupBy } from '../collections.js';
import { AOF_WAIT_MS, AofWaiter } from './aof.waiter.js';
import { isCluster, type RedisClient } from './counter-redis.handle.js';
import { ReplicaWaiter } from './replica.waiter.js';
import {
  defineScripts,
  scriptBody,
  type Arg,
  type CommandName,
  type CommandTarget,
  type ScriptName,
} from './script-commands.js';
import { toStoreError } from './store-errors.js';
import { TurnBatcher, type Queued } from './turn.batcher.js';

/**
 * States in which a command can be sent now: connected, or a lazy client's first command (which
 * connects it). In any other state it would be refused or queued, so it is refused before sending.
 */
const SENDABLE_STATES = new Set(['ready', 'wait']);

/**
 * Redis's answer to a script called by SHA that it no longer holds (SCRIPT FLUSH, a restart, a failover,
 * an eviction): the script did not run.
 */
const NO_SCRIPT = /^NOSCRIPT\b/;

/** A command and how to read its reply: what the runner sends. */
export interface RedisCall<T> {
  /** The cluster slot of every key it names; undefined for a call always sent alone (the client routes it). */
  slot: number | undefined;
  command: CommandName;
  /** As the command takes them: a script's number of keys, its KEYS, then its ARGV. */
  args: Arg[];
  /** The call's result, from its reply. */
  read(reply: unknown): T;
  /**
   * Whether the call's writes must be safe from a failover and a crash before its result is handed over:
   * on a cluster in the replicas of the slot's master (see `ReplicaWaiter`), and, where the
   * servers have `WAITAOF`, in the AOFs of that master and its replicas that keep one (`AofWaiter`).
   */
  replicate?(result: T): boolean;
  /** With `replicate`: a key of the call's slot that the wait for the AOF may write (`AofWaiter.persisted`). */
  mark?: string;
}

/** A call of `script` on the keys of a `slot`: `keys` as its KEYS, `argv` as its ARGV. */
export function scriptCall<T>(
  script: ScriptName | 'nestjsCounterClaimBuffer',
  slot: number | undefined,
  keys: string[],
  argv: Arg[],
  read: (reply: unknown) => T,
): RedisCall<T> {
  return { slot, command: script, args: [keys.length, ...keys, ...argv], read };
}

type QueuedCall = Queued<RedisCall<unknown>, unknown>;

/**
 * Sends the store's calls to a single Redis or a cluster, one pipeline per node, every failure turned
 * into what it means to the caller (see `toStoreError`). Two ways: `sendNow` sends calls at once,
 * `sendInTurn` sends a call with the others made in the same turn of the event loop.
 */
export class ScriptRunner {
  readonly client: RedisClient;
  /** Waits for the servers' AOFs, on connections of its own. */
  readonly aof: AofWaiter;
  /**
   * On a cluster, waits for a master's replicas (`WAIT`). Sent only after a call that asks for it (a claim
   * that holds a batch, a give-back): a WAIT holds up everything queued behind it on the connection.
   */
  private readonly replicas: ReplicaWaiter | undefined;
  private readonly turn = new TurnBatcher<RedisCall<unknown>, unknown>(Number.POSITIVE_INFINITY, 0, (queued) =>
    this.transmit(queued),
  );

  /** @param replicaWaitMs on a cluster, how long a WAIT waits for a master's replicas. */
  constructor(client: RedisClient, replicaWaitMs: number) {
    defineScripts(client);
    this.client = client;
    this.aof = new AofWaiter(client);
    this.replicas = isCluster(client) ? new ReplicaWaiter(client, replicaWaitMs) : undefined;
  }

  /** Closes the connections opened for the waits (not the client, which the module may not own). */
  close(): void {
    this.aof.close();
    this.replicas?.close();
  }

  /**
   * The longest a claim may wait for the AOFs after Redis ran it: its lease must outlast the wait, since
   * the flush renews it only once the claim resolves. (The replicas' WAIT, half the command timeout,
   * stays within a lease.)
   */
  get waitAfterClaimMs(): number {
    return this.aof.mayWait ? AOF_WAIT_MS : 0;
  }

  get sendable(): boolean {
    return SENDABLE_STATES.has(this.client.status);
  }

  notSendable(): CounterStoreUnavailableError {
    const reason = `connection is ${this.client.status}`;
    return new CounterStoreUnavailableError(MESSAGES.storeUnavailable(reason, false), { cause: new Error(reason) });
  }

  /**
   * Sends `calls` now, in one pipeline per node: a single Redis takes them all in one round trip, a
   * cluster one round trip per node touched (a cluster pipeline must stay on one node). Returns a
   * promise per call, in order, settled with its result or its failure as `toStoreError` gives it.
   */
  sendNow<T>(calls: RedisCall<T>[]): Promise<T>[] {
    if (!this.sendable) {
      const error = this.notSendable();
      return calls.map(() => Promise.reject(error));
    }
    const queued: QueuedCall[] = [];
    const results = calls.map(
      (request) =>
        new Promise<T>((resolve, reject) =>
          queued.push({ request, resolve: resolve as (result: unknown) => void, reject }),
        ),
    );
    void this.transmit(queued);
    return results;
  }

  /**
   * Sends `call` with the others made in the same turn of the event loop, as `sendNow` sends them. A
   * flush claims the shards of a transaction at once, and acknowledges them at once, so each takes one
   * write and one round trip per node instead of one per shard.
   */
  sendInTurn<T>(call: RedisCall<T>): Promise<T> {
    if (!this.sendable) return Promise.reject(this.notSendable());
    return this.turn.add(call as RedisCall<unknown>) as Promise<T>;
  }

  /**
   * `requests` in groups one script call each can serve: all of them on a single Redis, those of one
   * slot on a cluster (a script's keys must share one); at most `most` in size per group (`sizeOf`, 1
   * each by default), whole requests at a time (a larger one goes alone).
   */
  groupsForCalls<R>(
    requests: R[],
    slotOf: (request: R) => number,
    most = Number.POSITIVE_INFINITY,
    sizeOf: (request: R) => number = () => 1,
  ): R[][] {
    const bySlot = isCluster(this.client) ? [...groupBy(requests, slotOf).values()] : [requests];
    return bySlot.flatMap((requestsOfSlot) => {
      const groups: R[][] = [];
      let size = Number.POSITIVE_INFINITY;
      for (const request of requestsOfSlot) {
        const more = sizeOf(request);
        if (size + more > most) {
          groups.push([]);
          size = 0;
        }
        groups[groups.length - 1].push(request);
        size += more;
      }
      return groups;
    });
  }

  /**
   * Sends the calls, each settled once: a lone call straight to the client (on a cluster ioredis routes
   * it), since a pipeline costs more to build than the call itself; others in one pipeline per node.
   */
  private async transmit(queued: QueuedCall[]): Promise<void> {
    const sentAt = performance.now();
    const sent = queued.map((entry) => ({ call: entry.request, settle: this.settler(entry, sentAt) }));
    if (sent.length === 1) {
      const [{ call, settle }] = sent;
      try {
        settle(null, await ((this.client as unknown as CommandTarget)[call.command](...call.args) as Promise<unknown>));
      } catch (error) {
        settle(error as Error);
      }
      return;
    }
    // On a single Redis each call is settled as its reply arrives, not with the round trip's last one, so
    // a flush worker's transaction does not wait for another worker's claims sent alongside. A cluster
    // pipeline sends again what a node redirects: there a call is settled from its results.
    const early = !isCluster(this.client);
    await Promise.all(
      [...groupBy(sent, ({ call }) => this.nodeOf(call.slot)).values()].map(async (ofNode) => {
        const pipeline = this.client.pipeline() as unknown as CommandTarget & { exec(): Promise<unknown> };
        for (const { call, settle } of ofNode) {
          if (early) pipeline[call.command](...call.args, settle);
          else pipeline[call.command](...call.args);
        }
        try {
          const results = ((await pipeline.exec()) ?? []) as Array<[Error | null, unknown]>;
          // A call settled early stays so; this settles the rest (a cluster's).
          ofNode.forEach(({ settle }, i) => settle(...(results[i] ?? [new Error(NO_REPLY), undefined])));
        } catch (error) {
          for (const { settle } of ofNode) settle(error as Error);
        }
      }),
    );
  }

  /** The node that serves a slot; before the slot map is known, the slot itself (ioredis routes its pipeline). */
  private nodeOf(slot: number | undefined): string {
    if (!isCluster(this.client)) return 'server';
    return (slot === undefined ? undefined : this.client.slots[slot]?.join(',')) ?? `slot:${slot}`;
  }

  /**
   * Settles a call once, from the first error or reply it is given: a failure as `toStoreError` gives
   * it; a reply as the call reads it, once the replicas (and AOFs) have it where the call asks for them.
   * `sentAt`: when the call was sent (`performance.now()`). A NOSCRIPT is no answer: the call is sent
   * again with its body.
   */
  private settler(
    { request: call, resolve, reject }: QueuedCall,
    sentAt: number,
  ): (error: Error | null | undefined, reply?: unknown) => void {
    let settled = false;
    const settle = (error: Error | null | undefined, reply?: unknown): void => {
      if (error) return reject(toStoreError(error));
      let result: unknown;
      try {
        result = call.read(reply);
      } catch (readError) {
        return reject(readError);
      }
      if (call.slot === undefined || !call.replicate?.(result)) return resolve(result);
      Promise.all([this.replicas?.confirm(call.slot, sentAt), this.awaitAof(call.slot, call.mark, sentAt)]).then(
        () => resolve(result),
        (waitError: unknown) => reject(toStoreError(waitError)),
      );
    };
    return (error, reply) => {
      if (settled) return;
      settled = true;
      if (error && NO_SCRIPT.test(error.message)) {
        this.sendWhole(call).then(
          (wholeReply) => settle(null, wholeReply),
          (wholeError: Error) => settle(wholeError),
        );
      } else settle(error, reply);
    };
  }

  /**
   * A script call sent with the script's body (EVAL), for a server that answered NOSCRIPT, which ran
   * nothing: it runs once. ioredis sends such a call again itself, but by SHA where another call has just
   * sent the body on the connection, and a second emptying of the cache can meet that call too.
   */
  private sendWhole(call: RedisCall<unknown>): Promise<unknown> {
    const script = scriptBody(call.command);
    if (!script) return Promise.reject(new Error(`${call.command} is not a script`));
    const client = this.client as unknown as Record<'eval' | 'evalBuffer', (...args: Arg[]) => Promise<unknown>>;
    return client[script.buffers ? 'evalBuffer' : 'eval'](script.lua, ...call.args);
  }

  /**
   * Where the servers have `WAITAOF`, waits until the slot's master and its replicas that keep an AOF have
   * fsynced the call's writes: a server that restarts from an AOF without them (`appendfsync everysec`
   * loses up to a second) would bring the batch's changes back as pending otherwise. A server without
   * `WAITAOF`, or without an AOF anywhere, is not waited for.
   */
  private async awaitAof(slot: number, mark: string | undefined, sentAt: number): Promise<void> {
    if (mark === undefined) return;
    if ((await this.aof.persisted(slot, mark, 'master-and-replicas', sentAt)) === 'late') {
      throw new CounterReplicationLagError(MESSAGES.claimNotFsynced(AOF_WAIT_MS));
    }
  }
}

/** What a pipeline gives for a call it has no result for. */
const NO_REPLY = 'The pipeline gave no reply for the call.';
