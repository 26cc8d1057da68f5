import type { Logger } from '@nestjs/common';
import { groupBy } from '../collections.js';
import { MESSAGES } from '../counter.messages.js';
import type { CounterDatabase } from '../sql/counter.database.js';
import type { FlushRun, ShardWork } from './flush.run.js';

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
    private readonly database: CounterDatabase,
    private readonly deploymentTag: string,
    private readonly logger: Logger,
  ) {}

  /** Of the shards whose key bootstrap made, those that lost their data while no instance ran. */
  async among(made: ShardWork[]): Promise<ShardWork[]> {
    const lost: ShardWork[] = [];
    for (const [entity, shards] of groupBy(made, (work) => work.entity)) {
      const flushed = await this.flushedShards(entity);
      lost.push(...shards.filter((work) => flushed.has(work.shard)));
    }
    return lost;
  }

  /**
   * Whether a shard whose key a claim of `run` made had flushed before: the ledger is read once per
   * entity and flush, before the flush writes any batch of it.
   */
  async flushedBefore(run: FlushRun, work: ShardWork): Promise<boolean> {
    let flushed = run.flushedShards.get(work.entity);
    if (!flushed) {
      flushed = this.flushedShards(work.entity);
      run.flushedShards.set(work.entity, flushed);
    }
    return (await flushed).has(work.shard);
  }

  private flushedShards(entity: ShardWork['entity']): Promise<Set<number>> {
    return this.database.flushedShards(entity, this.deploymentTag).catch((error: Error) => {
      this.logger.warn(MESSAGES.lossCheckFailed(error.message));
      return new Set<number>();
    });
  }
}
