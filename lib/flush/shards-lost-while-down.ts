import type { Logger } from '@nestjs/common';
import { groupBy } from '../collections.js';
import { MESSAGES } from '../counter.messages.js';
import type { FlushStore } from '../redis/flush.store.js';
import type { CounterDatabase } from '../sql/counter.database.js';
import type { FlushPass, FlushShard } from './flush.pass.js';
import type { RedisDataLossDetector } from './redis-data-loss.detector.js';

/**
 * Tells which shards whose generation key had to be made again before this instance saw every key in
 * place (at bootstrap, or in the first flush of an instance whose bootstrap could not reach Redis) lost
 * their data meanwhile: those the ledger shows this deployment (its batch ids start with `deploymentTag`,
 * see BatchIds) flushed before, so their key had been made then. A shard whose ledger rows were all
 * pruned (`ledgerRetentionMs`) looks new, and its loss goes unnoticed here. A ledger that cannot be read
 * is logged and taken for one that shows nothing.
 */
export class ShardsLostWhileDown {
  constructor(
    private readonly store: FlushStore,
    private readonly database: CounterDatabase,
    private readonly lossDetector: RedisDataLossDetector,
    private readonly deploymentTag: string,
    private readonly logger: Logger,
  ) {}

  /**
   * At bootstrap: marks the shards (makes their missing generation keys), so that a later loss of Redis
   * data can be told from a first start, and returns those that lost their data while no instance ran.
   */
  async markShards(shards: FlushShard[]): Promise<FlushShard[]> {
    let made: boolean[];
    try {
      made = await this.store.markShards(shards.map((shard) => shard.keys));
    } catch {
      // With Redis down, the first flush that reaches it finds the shards instead.
      return [];
    }
    this.lossDetector.shardsInPlace();
    return this.among(shards.filter((_, index) => made[index]));
  }

  /** Of the shards whose key bootstrap made, those that lost their data while no instance ran. */
  private async among(made: FlushShard[]): Promise<FlushShard[]> {
    const lost: FlushShard[] = [];
    for (const [entity, shards] of groupBy(made, (shard) => shard.entity)) {
      const flushed = await this.flushedShards(entity);
      lost.push(...shards.filter((shard) => flushed.has(shard.index)));
    }
    return lost;
  }

  /**
   * Whether a shard whose key a claim of `pass` made had flushed before: the ledger is read once per
   * entity and flush, before the flush writes any batch of it.
   */
  async flushedBefore(pass: FlushPass, shard: FlushShard): Promise<boolean> {
    let flushed = pass.flushedShards.get(shard.entity);
    if (!flushed) {
      flushed = this.flushedShards(shard.entity);
      pass.flushedShards.set(shard.entity, flushed);
    }
    return (await flushed).has(shard.index);
  }

  private flushedShards(entity: FlushShard['entity']): Promise<Set<number>> {
    return this.database.flushedShards(entity, this.deploymentTag).catch((error: Error) => {
      this.logger.warn(MESSAGES.lossCheckFailed(error.message));
      return new Set<number>();
    });
  }
}
