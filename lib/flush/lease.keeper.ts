import type { FlushStore } from '../redis/flush.store.js';
import type { FlushPass } from './flush.pass.js';

/**
 * Renewals per lease length: a lease survives two renewals in a row that come late or fail (a busy
 * event loop, a slow Redis) before it runs out.
 */
const RENEWALS_PER_LEASE = 3;

/**
 * Keeps the leases of one flush alive while it runs: every third of the lease length, the leases it
 * holds are extended in one call per slot (see renew.lua.ts). A live flusher so keeps its shards however
 * long its transactions take, and a dead one (which renews nothing) loses them within one lease length,
 * for another instance to take over (G10). A lease found gone is lost (ShardLease): the flush writes and
 * acknowledges nothing more of its shard, and the batch is finished by whoever holds the lease next.
 * Once the flush ended, the leases it still holds are given back.
 */
export class LeaseKeeper {
  private timer?: NodeJS.Timeout;
  /** Renewals waiting for their replies. */
  private readonly renewing = new Set<Promise<void>>();

  constructor(
    private readonly store: FlushStore,
    private readonly pass: FlushPass,
    private readonly leaseMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.renew(), Math.max(1, Math.floor(this.leaseMs / RENEWALS_PER_LEASE)));
    // A flush in progress must not keep the process alive by its renewals alone.
    this.timer.unref();
  }

  /** Stops renewing, once the renewals under way (if any) have ended. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.renewing);
  }

  /**
   * Gives back the leases the flush still holds once it ended: those of the shards a stopped flush would
   * have come back to, so that another flusher need not wait for them to run out.
   */
  async releaseHeld(): Promise<void> {
    const held = this.pass.heldLeases();
    await Promise.all(
      held.map(({ shard }) => {
        shard.lease.released();
        return this.store.release(shard.keys, this.pass.token).catch(() => undefined);
      }),
    );
  }

  /**
   * Renews on schedule even while an earlier renewal waits for its reply: one slow reply (a slow node, a
   * reply stuck until the command timeout) must not hold back the renewals that would keep the leases.
   * At most one lease length's worth wait at once, so a Redis that stopped answering is not flooded.
   */
  private renew(): void {
    if (this.renewing.size >= RENEWALS_PER_LEASE) return;
    const held = this.pass.heldLeases();
    if (held.length === 0) return;
    const renewal = this.store
      .renew(
        held.map(({ shard }) => shard.keys),
        this.pass.token,
        this.leaseMs,
      )
      .then((renewed) => renewed.forEach((kept, index) => kept || this.pass.renewalRefused(held[index])))
      // Redis unreachable: the flush itself fails on it; a lease that runs out meanwhile is fenced.
      .catch(() => undefined)
      .finally(() => this.renewing.delete(renewal));
    this.renewing.add(renewal);
  }
}
