import { Injectable, Logger } from '@nestjs/common';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { MESSAGES } from '../counter.messages.js';
import { resolveHealthOptions } from '../counter-options.js';
import { CounterStatusReader } from '../counter-status.reader.js';
import { failureReasonOf } from '../exceptions/counter-failure-reason.js';
import type { CounterHealthOptions } from '../interfaces/counter-health-options.interface.js';
import type { CounterStatus } from '../interfaces/counter-status.interface.js';
import { EvictionPolicyCheck } from '../redis/eviction-policy.check.js';
import { degradedOf } from '../peer-compat.js';
import { terminusHealthIndicators } from './terminus.loader.js';

/**
 * A health indicator for `@nestjs/terminus` 11 and 12 (an optional peer, loaded on the first check):
 * `health.check([() => this.counterHealth.isHealthy('counters')])`. Its data are `CounterService.status()`'s
 * figures, with a `message` when it is not up.
 * @see docs/OPERATING.md, "Health"
 * @publicApi
 */
@Injectable()
export class CounterHealthIndicator {
  private readonly logger = new Logger('CounterHealthIndicator');

  constructor(
    private readonly statusReader: CounterStatusReader,
    private readonly eviction: EvictionPolicyCheck,
  ) {}

  /**
   * `down` when Redis is unreachable, when its `maxmemory-policy` may evict changes (`allkeys-*`, unless
   * `acceptLossOnEviction`) or the last `downAfterFailedFlushes` flushes of this instance failed;
   * `degraded` (Terminus 12; `up` on Terminus 11, which has no such status) when fewer flushes in a row
   * failed or the oldest change not yet in the database is older than `degradedAfterMs`; `up` otherwise.
   * @param key the indicator's key in the health check's result. @default 'counters'
   */
  async isHealthy<const Key extends string = 'counters'>(
    key: Key = 'counters' as Key,
    options?: CounterHealthOptions,
  ): Promise<HealthIndicatorResult<Key>> {
    const { degradedAfterMs, downAfterFailedFlushes } = resolveHealthOptions(options);
    const session = (await terminusHealthIndicators()).check(key);
    let status: CounterStatus;
    try {
      status = await this.statusReader.status();
    } catch (error) {
      // A health check may be public: the error's words go to the log, its kind to the check.
      const message = MESSAGES.healthStatusFailed(failureReasonOf(error));
      this.logger.error(`${message} ${(error as Error).message}`, (error as Error).stack);
      return session.down({ message });
    }
    const failures = status.consecutiveFailedFlushes;
    if (!status.redisAvailable) return session.down({ message: MESSAGES.healthRedisDown(), ...status });
    // A policy that cannot be read (an ACL without INFO) was warned about at bootstrap.
    const eviction = await this.eviction.problem().catch(() => undefined);
    if (eviction) return session.down({ message: eviction, ...status });
    if (failures >= downAfterFailedFlushes) {
      return session.down({ message: MESSAGES.healthFlushesFailing(failures), ...status });
    }
    const age = status.oldestPendingAgeMs ?? 0;
    const degradation =
      failures > 0
        ? MESSAGES.healthFlushFailed(failures)
        : age > degradedAfterMs
          ? MESSAGES.healthBacklogOld(age, degradedAfterMs)
          : undefined;
    // Terminus 11 has no degraded status (it would drop the indicator from its result): up, with the figures.
    const degraded = degradedOf<Key>(session);
    if (degradation && degraded) return degraded({ message: degradation, ...status });
    return session.up({ ...status });
  }
}
