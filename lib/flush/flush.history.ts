import { Injectable, Logger } from '@nestjs/common';
import { MESSAGES } from '../counter.messages.js';
import type { CountedEntity } from '../model/counted-entity.js';
import { failureReasonOf, type CounterFailureReason } from '../exceptions/counter-failure-reason.js';
import type { RedisDataLossReport } from '../interfaces/counter-status.interface.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';

/** Told of a loss of Redis data: see `FlushHistory.redisDataLost`. */
export type RedisDataLossListener = (entities: CountedEntity[], keysMadeOf: CountedEntity[]) => void;

/**
 * How this instance's flushes went (the last success, the last failure, the failures in a row) and the
 * last loss of Redis data it detected: what `status()` reports and the scheduler's backoff reads.
 */
@Injectable()
export class FlushHistory {
  private readonly logger = new Logger('CounterFlush');
  lastSuccessfulFlushAt: Date | null = null;
  lastFailedFlushAt: Date | null = null;
  /** The kind of the last failure only: its words (tables, constraints, hosts) go to the log, never to status(). */
  lastFlushError: CounterFailureReason | null = null;
  consecutiveFailedFlushes = 0;
  lastRedisDataLoss: RedisDataLossReport | null = null;

  /**
   * A flush ended with `report`. One that found every shard with work (`shardsWithWork`) in another
   * flusher's hands did nothing this instance can vouch for (that flusher may be failing): it is no success.
   */
  flushEnded(report: FlushReport, shardsWithWork: number): void {
    if (report.error) this.flushFailed(report.error);
    else if (report.busyShards === 0 || report.busyShards < shardsWithWork) this.flushSucceeded();
  }

  private flushSucceeded(): void {
    this.lastSuccessfulFlushAt = new Date();
    this.consecutiveFailedFlushes = 0;
  }

  flushFailed(error: Error): void {
    this.lastFailedFlushAt = new Date();
    this.lastFlushError = failureReasonOf(error);
    this.consecutiveFailedFlushes++;
  }

  private readonly lossListeners: Array<RedisDataLossListener> = [];

  /**
   * A loss of Redis data was detected, in `shards` shards of `entities`; `keysMadeOf`: the entities whose
   * generation keys the detector made again (it saw the loss happen, rather than a generation going back).
   */
  redisDataLost(shards: number, entities: CountedEntity[], keysMadeOf: CountedEntity[]): void {
    const sorted = [...entities].sort((a, b) => a.name.localeCompare(b.name));
    const repair = MESSAGES.dataLossRepair(
      sorted.flatMap((entity) =>
        entity.counters.map((counter) => ({ name: `${entity.name}.${counter.name}`, sourced: !!counter.source })),
      ),
    );
    const names = sorted.map((entity) => entity.name);
    const lastSuccessfulFlushAt = this.lastSuccessfulFlushAt;
    this.lastRedisDataLoss = { detectedAt: new Date(), shards, entities: names, repair, lastSuccessfulFlushAt };
    this.logger.error(`${MESSAGES.redisDataLost(shards, names, lastSuccessfulFlushAt)} ${repair}`);
    for (const listener of this.lossListeners) listener(entities, keysMadeOf);
  }

  /** Calls `listener` with the entities concerned each time a loss of Redis data is detected. */
  onRedisDataLoss(listener: RedisDataLossListener): void {
    this.lossListeners.push(listener);
  }
}
