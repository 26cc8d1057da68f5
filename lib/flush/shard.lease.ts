/**
 * A flush's hold on one shard's lease (the shard's lease key, see claim.lua.ts): free, held from a claim
 * until the flush lets it go, or lost when a renewal found it gone (see LeaseKeeper). A lost lease is
 * another flusher's: this flush writes and acknowledges nothing more of the shard.
 */
export class ShardLease {
  private state: 'free' | 'held' | 'lost' = 'free';
  /** Claims that took the lease: tells a renewal's reply about an earlier hold from the current one. */
  private holds = 0;

  get held(): boolean {
    return this.state === 'held';
  }

  get lost(): boolean {
    return this.state === 'lost';
  }

  /** Which hold this is, for a renewal to name the one it was asked for. */
  get hold(): number {
    return this.holds;
  }

  /** A claim took the lease (or kept it, between two batches of the shard). */
  taken(): void {
    this.state = 'held';
    this.holds++;
  }

  /** The flush let the lease go (ack.lua.ts or release.lua.ts gave it back). */
  released(): void {
    if (this.state === 'held') this.state = 'free';
  }

  /**
   * A renewal asked for hold `hold` found the lease gone: lost, unless the flush let it go or took it
   * again since. True when it is lost by this call.
   */
  lose(hold: number): boolean {
    if (this.state !== 'held' || this.holds !== hold) return false;
    this.state = 'lost';
    return true;
  }
}
