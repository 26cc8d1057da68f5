import { Injectable, Logger } from '@nestjs/common';
import { MESSAGES } from '../counter.messages.js';
import type { RedisDataLossReport } from '../interfaces/counter-status.interface.js';

/** This instance's record of its flushes and of the Redis data losses it detected, for `status()`. */
@Injectable()
export class FlushRecord {
  private readonly logger = new Logger('CounterFlush');
  lastSuccessfulFlushAt: Date | null = null;
  lastFailedFlushAt: Date | null = null;
  lastFlushError: string | null = null;
  consecutiveFailedFlushes = 0;
  lastRedisDataLoss: RedisDataLossReport | null = null;

  flushSucceeded(): void {
    this.lastSuccessfulFlushAt = new Date();
    this.consecutiveFailedFlushes = 0;
  }

  flushFailed(error: Error): void {
    this.lastFailedFlushAt = new Date();
    this.lastFlushError = error.message;
    this.consecutiveFailedFlushes++;
  }

  redisDataLost(shards: number): void {
    this.lastRedisDataLoss = { detectedAt: new Date(), shards, lastSuccessfulFlushAt: this.lastSuccessfulFlushAt };
    this.logger.error(MESSAGES.redisDataLost(shards, this.lastSuccessfulFlushAt));
  }
}
