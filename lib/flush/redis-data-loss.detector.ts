import type { ShardKeys } from '../redis/counter.keys.js';

/** What a reply tells of a shard's state: whether its generation key was missing, and its generation. */
export interface ShardGeneration {
  dataLost: boolean;
  generation: number;
}

/**
 * Tells from the replies of flush scripts whether Redis lost a shard's data. Every shard has a generation
 * key that never expires and only grows (each acknowledged batch bumps it): a reply that shows it missing,
 * once this instance has seen every shard's key in place, or lower than a reply before showed it, means
 * that Redis lost the shard's data (a restart without persistence, a failover to a replica that was
 * behind, eviction).
 */
export class RedisDataLossDetector {
  /** Only once every shard's key has been seen in place does a missing one mean lost data, not a new deployment. */
  private shardsMarked = false;
  /** The last generation seen per shard. */
  private readonly generations = new Map<string, number>();

  /** Every shard's generation key is in place (made at bootstrap, or found by a flush that went well). */
  shardsInPlace(): void {
    this.shardsMarked = true;
  }

  /**
   * To call just before sending a command whose reply shows the shard's generation: returns the check of
   * that reply, true when it shows lost data. Every generation recorded by then came from a reply to a
   * command Redis ran before this one, so the reply cannot show less unless the data was lost.
   */
  before(shard: ShardKeys): (reply: ShardGeneration) => boolean {
    const seenBefore = this.generations.get(shard.tag) ?? 0;
    return ({ dataLost, generation }) => {
      const lost = (dataLost && this.shardsMarked) || generation < seenBefore;
      // After a loss the generation starts again from 0; otherwise it only grows, and a reply handled
      // late (after a newer one was recorded) must not lower it.
      if (lost) this.generations.set(shard.tag, generation);
      else this.record(shard, generation);
      return lost;
    };
  }

  /** The shard's generation key, found missing (a loss already reported), was made again at 1. */
  remade(shard: ShardKeys): void {
    this.generations.set(shard.tag, 1);
  }

  /** A batch of the shard claimed at `generation` was acknowledged: the generation moved on by one. */
  acknowledged(shard: ShardKeys, generation: number): void {
    this.record(shard, generation + 1);
  }

  private record(shard: ShardKeys, generation: number): void {
    this.generations.set(shard.tag, Math.max(generation, this.generations.get(shard.tag) ?? 0));
  }
}
