import type { Cluster, Redis } from 'ioredis';
import { MESSAGES } from '../counter.messages.js';
import { CounterReplicationLagError } from '../exceptions/counter-replication-lag.error.js';
import { coversWritesSentAt } from './aof-wait.lanes.js';

/**
 * Waits, on a cluster, until the replicas of a slot's master have the writes sent to it (`WAIT`). A WAIT
 * counts the writes of the connection it goes on, and Redis 7.2+ and Valkey count those of a connection
 * made since from offset 0: a WAIT resent after a reconnection would confirm at once writes it never
 * carried. So, as for the AOF waits (`coversWritesSentAt`), it counts only on a node connection connected
 * since before the writes were sent and still connected when it answers; otherwise it is late.
 */
export class ReplicaWaiter {
  /** When each node connection was last connected (performance.now()); none while it is not. */
  private readonly readyAt = new WeakMap<Redis, number>();
  private readonly track = (node: Redis): void => {
    if (node.status === 'ready') this.readyAt.set(node, performance.now());
    node.on('ready', () => this.readyAt.set(node, performance.now()));
    node.on('close', () => this.readyAt.delete(node));
  };

  /** @param waitMs how long a WAIT waits for the replicas. */
  constructor(
    private readonly client: Cluster,
    private readonly waitMs: number,
  ) {
    for (const node of client.nodes('all')) this.track(node);
    client.on('+node', this.track);
  }

  /**
   * Waits until the replicas of `slot`'s master have every write sent to it before `sentAt`
   * (`performance.now()`); rejects with CounterReplicationLagError when they do not confirm in time or the
   * connection cannot tell (it reconnected since).
   */
  async confirm(slot: number, sentAt: number): Promise<void> {
    const [master, ...replicas] = this.client.slots[slot] ?? [];
    if (!master || replicas.length === 0) return;
    // WAIT names no key, so the cluster would route it anywhere: send it on the master's own connection.
    const connection = this.client
      .nodes('master')
      .find((node) => `${node.options.host}:${node.options.port}` === master);
    const covers = () =>
      connection !== undefined && coversWritesSentAt({ connection, readyAt: this.readyAt.get(connection) }, sentAt);
    if (!connection || !covers()) throw this.lag(0, replicas.length);
    const confirmed = await connection.wait(replicas.length, this.waitMs);
    // Resent after a reconnection, it answered for the new connection's writes: none of the call's.
    if (!covers()) throw this.lag(0, replicas.length);
    if (confirmed < replicas.length) throw this.lag(confirmed, replicas.length);
  }

  close(): void {
    this.client.off('+node', this.track);
  }

  private lag(confirmed: number, replicas: number): CounterReplicationLagError {
    return new CounterReplicationLagError(MESSAGES.claimNotReplicated(confirmed, replicas, this.waitMs));
  }
}
