import type { Logger } from '@nestjs/common';
import { MESSAGES } from '../counter.messages.js';
import type { FlushStore } from '../redis/flush.store.js';
import type { ApplyOutcome } from '../sql/counter.database.js';
import { encodedIdsOf, type ClaimedBatch } from './claimed-batch.js';
import type { FlushHistory } from './flush.history.js';
import type { FlushPass } from './flush.pass.js';
import type { RedisDataLossDetector } from './redis-data-loss.detector.js';

/**
 * What becomes of a batch in Redis once its transaction has ended: acknowledged if the database has it,
 * and, when Redis no longer holds it as the shard's batch in flight (Redis lost its data, or another
 * flusher finished it), its rows forgotten (forget.lua.ts): a row loaded meanwhile may have missed it, or
 * counted a transaction that rolled back. See docs/DESIGN.md, "Redis data loss".
 */
export class BatchSettler {
  constructor(
    private readonly store: FlushStore,
    private readonly lossDetector: RedisDataLossDetector,
    private readonly history: FlushHistory,
    private readonly logger: Logger,
  ) {}

  /**
   * Acknowledges a batch the database has (see ack.lua.ts), giving the lease back when `release`; false
   * when Redis no longer held it, its rows then forgotten. Sent even when the lease ran out meanwhile: the
   * batch is committed, and acknowledging it is what its next holder would do.
   */
  async acknowledge(
    claimed: ClaimedBatch,
    token: string,
    release: boolean,
    missingIds: Array<string | number>,
    pass?: FlushPass,
  ): Promise<boolean> {
    const { shard, batch } = claimed;
    const missing = encodedIdsOf(claimed, missingIds);
    const counters = shard.entity.scriptNames;
    const acknowledged = await this.store.ack(shard.keys, batch.batchId, token, release, counters, missing);
    if (acknowledged) this.lossDetector.acknowledged(shard.keys, claimed.generation);
    else await this.forgetIfGone(claimed, pass);
    return acknowledged;
  }

  /**
   * Forgets the rows of a batch unless Redis still holds it as the shard's batch in flight. After a failed
   * transaction: a batch Redis lost meanwhile may have had its rows loaded inside the transaction (SQLite's
   * one connection) or before a COMMIT whose outcome is unknown. A generation key found missing is a loss.
   */
  async forgetIfGone(claimed: ClaimedBatch, pass?: FlushPass): Promise<void> {
    const { shard, batch } = claimed;
    const outcome = await this.store.forget(shard.keys, batch.batchId, encodedIdsOf(claimed, batch.rows.ids));
    if (outcome !== 'lost') return;
    this.lossDetector.remade(shard.keys);
    // The script made the generation key again: this instance is the one to queue the repair.
    if (pass) pass.shardLost(shard.entity, true);
    else this.history.redisDataLost(1, [shard.entity], [shard.entity]);
  }

  /**
   * A transaction the flush stopped waiting for (`databaseTimeoutMs`) ended, with `outcome` (undefined:
   * it failed): its batches are settled as if the flush had waited.
   */
  endedLate(batches: ClaimedBatch[], outcome: ApplyOutcome | undefined): void {
    batches.forEach(async (claimed, index) => {
      try {
        if (outcome?.applied) await this.acknowledge(claimed, '', false, outcome.missingIds[index]);
        else await this.forgetIfGone(claimed);
      } catch (error) {
        this.logger.warn(MESSAGES.lateBatchNotSettled(claimed.shard.entity.key, (error as Error).message));
      }
    });
  }
}
