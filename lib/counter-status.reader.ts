import { Injectable } from '@nestjs/common';
import { CounterRegistry } from './counter.registry.js';
import { CounterStoreUnavailableError } from './exceptions/counter-store-unavailable.error.js';
import { FlushHistory } from './flush/flush.history.js';
import type { CounterStatus } from './interfaces/counter-status.interface.js';
import { CounterKeys } from './redis/counter.keys.js';
import { FlushStore } from './redis/flush.store.js';

/**
 * Reads `CounterService.status()`: the backlog every counted entity has in Redis, and this instance's
 * history of its flushes. Read by the service, the health indicator, the backlog gauges and the final
 * flush's warning.
 */
@Injectable()
export class CounterStatusReader {
  constructor(
    private readonly registry: CounterRegistry,
    private readonly keys: CounterKeys,
    private readonly flushStore: FlushStore,
    private readonly history: FlushHistory,
  ) {}

  /** The status; with Redis down the backlog fields are null. One round trip per Redis node. */
  async status(): Promise<CounterStatus> {
    const { lastSuccessfulFlushAt, lastFailedFlushAt, lastFlushError, consecutiveFailedFlushes, lastRedisDataLoss } =
      this.history;
    const flushing = {
      lastSuccessfulFlushAt,
      lastFailedFlushAt,
      lastFlushError,
      consecutiveFailedFlushes,
      lastRedisDataLoss,
    };
    const shards = this.registry.all().flatMap((entity) => this.keys.shardsOf(entity.key));
    try {
      const backlog = await this.flushStore.backlog(shards);
      const ages = backlog.flatMap((shard) => (shard.oldestAgeMs === null ? [] : [shard.oldestAgeMs]));
      return {
        redisAvailable: true,
        pendingRows: backlog.reduce((sum, shard) => sum + shard.dirtyRows + shard.batchRows, 0),
        inFlightBatches: backlog.filter((shard) => shard.batchRows > 0).length,
        oldestPendingAgeMs: ages.length === 0 ? null : Math.max(...ages),
        ...flushing,
      };
    } catch (error) {
      if (!(error instanceof CounterStoreUnavailableError)) throw error;
      return { redisAvailable: false, pendingRows: null, inFlightBatches: null, oldestPendingAgeMs: null, ...flushing };
    }
  }
}
