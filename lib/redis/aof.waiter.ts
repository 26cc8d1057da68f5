import type { Redis } from 'ioredis';
import { fsyncWaitProblem, probeKey } from './aof-fsync.probe.js';
import { readAofSupport, type AofSupport } from './aof-support.js';
import { AofWaitLanes, coversWritesSentAt } from './aof-wait.lanes.js';
import { isCluster, type RedisClient } from './counter-redis.handle.js';

/**
 * How long a wait for the AOF may take: `appendfsync everysec` fsyncs once a second, in the background,
 * so a write waits up to a second for it; one that waits twice that long meets a disk too slow to count on.
 */
export const AOF_WAIT_MS = 2_000;

/** How much longer than a wait its connection waits for the reply before it gives up on the socket. */
const REPLY_MARGIN_MS = 1_000;

/** How long the mark a wait writes lives: long enough to be written, never left behind. */
const MARK_TTL_MS = 60_000;

/**
 * What a wait found: the writes are in the AOFs asked for (`fsynced`), the time ran out first (`late`),
 * or there is no AOF to wait for: the server lacks `WAITAOF`, or neither it nor (where asked) any of its
 * replicas keeps an AOF (`unsupported`).
 */
export type AofWaitOutcome = 'fsynced' | 'late' | 'unsupported';

/** Whose AOFs a wait is for: the master's alone, or also its replicas' (those that keep one). */
export type AofWaitScope = 'master' | 'master-and-replicas';

/** A server's address, as the cluster's slot map names it; `server` for a single Redis. */
type Address = string;

const SINGLE_SERVER: Address = 'server';

/**
 * Waits, where the server has `WAITAOF` (Redis 7.2+, Valkey), until the writes a server acknowledged so
 * far are fsynced to its AOF (and to its replicas', as asked). `WAITAOF` waits for the writes of the
 * connection it is sent on and blocks that connection until the fsync, up to a second with `everysec`:
 * on the connection every change travels on it would hold them all up. So each master gets connections
 * of their own for the waits (`AofWaitLanes`), and a wait first writes a mark there (a key of the slot, with
 * a TTL): the mark comes after every write the server acknowledged before, so once it is fsynced they all
 * are. The callers of a turn share one wait per master.
 *
 * What each server offers is read at bootstrap or on first use (`readAofSupport`), and read again after
 * a reconnection, a node's removal from the cluster, or a failed wait.
 */
export class AofWaiter {
  private readonly support = new Map<Address, Promise<AofSupport>>();
  private readonly lanes = new Map<Address, AofWaitLanes>();
  /** Waits gathering callers, not sent yet, by address and counts asked for; the earliest of their writes. */
  private readonly gathering = new Map<string, { confirmed: Promise<[number, number]>; sentBefore: number }>();
  private closed = false;
  /**
   * Whether a server known has `WAITAOF` and an AOF, so that a claim may wait up to AOF_WAIT_MS for its
   * fsync after it took its lease (see `ScriptRunner.waitAfterClaimMs`).
   */
  mayWait = false;
  /** A server reached again may be another one (restarted with other settings, failed over): read it again. */
  private readonly reconnected = () => {
    this.support.clear();
    this.mayWait = false;
    void this.prime();
  };
  private readonly nodeRemoved = (node: Redis) => this.support.delete(addressOf(node));

  constructor(private readonly client: RedisClient) {
    client.on('ready', this.reconnected);
    if (isCluster(client)) client.on('-node', this.nodeRemoved);
  }

  /**
   * Reads what each server known now offers, so that a flush does not wait for it (a server met later,
   * or one that did not answer now, is read when first needed).
   */
  async prime(): Promise<void> {
    const addresses = isCluster(this.client) ? this.client.nodes('all').map(addressOf) : [SINGLE_SERVER];
    const masters = new Set(isCluster(this.client) ? this.client.nodes('master').map(addressOf) : [SINGLE_SERVER]);
    await Promise.all(
      addresses.map(async (address) => {
        const support = await this.supportOf(address).catch(() => undefined);
        // A wait needs a connection up since before the writes it covers: open it now.
        if (support?.waitAof && support.appendOnly && masters.has(address) && !this.closed)
          await this.lanesTo(address).warm();
      }),
    );
  }

  /**
   * Waits until every write Redis acknowledged before the call on `slot`'s master is in its AOF (and in
   * the AOF of each of its replicas that keeps one, for `master-and-replicas`), writes sent at `sentAt`
   * (`performance.now()`) among them. `mark` is a key of `slot` the wait may write. Rejects when the
   * master cannot be reached.
   */
  async persisted(slot: number, mark: string, scope: AofWaitScope, sentAt: number): Promise<AofWaitOutcome> {
    const [master, ...replicas] = this.addressesOf(slot);
    const masterSupport = await this.supportOf(master);
    if (!masterSupport.waitAof) return 'unsupported';
    const local = masterSupport.appendOnly ? 1 : 0;
    let remote = 0;
    if (scope === 'master-and-replicas') {
      const ofReplicas = await Promise.all(replicas.map((replica) => this.supportOf(replica).catch(() => undefined)));
      remote = ofReplicas.filter((replica) => replica?.waitAof && replica.appendOnly).length;
    }
    if (local === 0 && (scope === 'master' || remote === 0)) return 'unsupported';
    try {
      const [fsyncedLocal, fsyncedRemote] = await this.waitFor(master, mark, local, remote, sentAt);
      return fsyncedLocal >= local && fsyncedRemote >= remote ? 'fsynced' : 'late';
    } catch (error) {
      // The server may have changed (AOF turned off, a restart on another version): read it again next time.
      this.support.delete(master);
      throw error;
    }
  }

  /**
   * The masters that cannot make a change durable before it resolves (no `WAITAOF`, no AOF, or a WAITAOF
   * that answers before the fsync: `fsyncWaitProblem`, about a second per master), in a list of
   * `<server> (<reason>)`; empty when every master can. The probe writes a key under `prefix`.
   */
  async masterProblems(prefix: string): Promise<string[]> {
    const masters: Array<[Address, Redis]> = isCluster(this.client)
      ? this.client.nodes('master').map((node) => [addressOf(node), node])
      : [[SINGLE_SERVER, this.client]];
    const problems = await Promise.all(
      masters.map(async ([address, node]) => {
        const { waitAof, appendOnly } = await readAofSupport(node);
        const name = address === SINGLE_SERVER ? addressOf(node) : address;
        if (!waitAof) return `${name} (no WAITAOF: Redis 7.2+ or Valkey needed)`;
        if (!appendOnly) return `${name} (appendonly no)`;
        const problem = await this.probe(address, prefix);
        return problem ? `${name} (${problem})` : undefined;
      }),
    );
    return problems.filter((problem): problem is string => problem !== undefined);
  }

  /** `fsyncWaitProblem` on a lane of `master`, with a key of a slot it serves. */
  private async probe(master: Address, prefix: string): Promise<string | undefined> {
    const lanes = this.lanesTo(master);
    await lanes.warm();
    const lane = await lanes.acquire(() => Number.POSITIVE_INFINITY);
    if (!lane) return 'not reachable';
    try {
      const serves = isCluster(this.client) ? (slot: number) => this.slotMaster(slot) === master : undefined;
      return await fsyncWaitProblem(lane.connection, probeKey(prefix, serves));
    } finally {
      lanes.release(lane);
    }
  }

  private slotMaster(slot: number): Address | undefined {
    return isCluster(this.client) ? this.client.slots[slot]?.[0] : SINGLE_SERVER;
  }

  /** Closes the connections the waits opened. */
  close(): void {
    this.closed = true;
    this.client.off('ready', this.reconnected).off('-node', this.nodeRemoved);
    for (const lanes of this.lanes.values()) lanes.close();
    this.lanes.clear();
  }

  /**
   * One `WAITAOF local remote` on a connection of `master`'s own, after a mark written there, for every
   * caller until it is sent; resolves with the counts it confirmed ([0, 0] when no connection was up since
   * before the callers' writes were sent). Callers that come while every lane is busy join it.
   */
  private waitFor(
    master: Address,
    mark: string,
    local: number,
    remote: number,
    sentAt: number,
  ): Promise<[number, number]> {
    const key = `${master} ${local} ${remote}`;
    const gathering = this.gathering.get(key);
    if (gathering) {
      gathering.sentBefore = Math.min(gathering.sentBefore, sentAt);
      return gathering.confirmed;
    }
    const wait = { sentBefore: sentAt, confirmed: Promise.resolve<[number, number]>([0, 0]) };
    wait.confirmed = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      const lanes = this.lanesTo(master);
      // Callers join until a lane is free: one wait then serves all of them.
      const lane = await lanes.acquire(() => wait.sentBefore);
      // From here on the callers are known: one that comes now needs a wait of its own.
      if (this.gathering.get(key) === wait) this.gathering.delete(key);
      if (!lane) return [0, 0];
      if (!coversWritesSentAt(lane, wait.sentBefore)) {
        lanes.release(lane);
        return [0, 0];
      }
      try {
        // The mark and the wait go in one write on one connection (no offline queue, no resending).
        const [, confirmed] = await Promise.all([
          lane.connection.set(mark, '1', 'PX', MARK_TTL_MS),
          lane.connection.call('waitaof', local, remote, AOF_WAIT_MS) as Promise<[number, number]>,
        ]);
        return confirmed;
      } finally {
        lanes.release(lane);
      }
    });
    wait.confirmed.catch(() => this.gathering.get(key) === wait && this.gathering.delete(key));
    this.gathering.set(key, wait);
    return wait.confirmed;
  }

  private supportOf(address: Address): Promise<AofSupport> {
    let support = this.support.get(address);
    if (!support) {
      support = Promise.resolve().then(() => readAofSupport(this.nodeAt(address)));
      support.then(
        ({ waitAof, appendOnly }) => (this.mayWait ||= waitAof && appendOnly),
        () => this.support.delete(address),
      );
      this.support.set(address, support);
    }
    return support;
  }

  /** The slot's master and its replicas, by address: the slot map's entry on a cluster. */
  private addressesOf(slot: number): Address[] {
    if (!isCluster(this.client)) return [SINGLE_SERVER];
    const addresses = this.client.slots[slot];
    if (!addresses || addresses.length === 0) throw new Error(`No Redis node is known for slot ${slot} yet.`);
    return addresses;
  }

  /** The client's own connection to a node: quick commands only (it carries the changes). */
  private nodeAt(address: Address): Redis {
    if (!isCluster(this.client)) return this.client;
    const node = this.client.nodes('all').find((candidate) => addressOf(candidate) === address);
    if (!node) throw new Error(`The Redis Cluster client has no connection to ${address}.`);
    return node;
  }

  /** The waits' own connections to a master, made as needed, with timeouts that outlast a wait. */
  private lanesTo(master: Address): AofWaitLanes {
    if (this.closed) throw new Error('The module is shutting down.');
    let lanes = this.lanes.get(master);
    if (!lanes) {
      const timeout = AOF_WAIT_MS + REPLY_MARGIN_MS;
      const node = this.nodeAt(master);
      lanes = new AofWaitLanes(() => {
        const connection = node.duplicate({
          lazyConnect: false,
          readOnly: false,
          enableOfflineQueue: false,
          autoResendUnfulfilledCommands: false,
          maxRetriesPerRequest: 1,
          commandTimeout: timeout,
          socketTimeout: timeout,
        });
        // Its failures reach the waits that meet them; ioredis would print each one otherwise.
        connection.on('error', () => undefined);
        return connection;
      }, AOF_WAIT_MS);
      this.lanes.set(master, lanes);
    }
    return lanes;
  }
}

function addressOf(node: Redis): Address {
  const { host, port, path } = node.options;
  return path ?? `${host}:${port}`;
}
