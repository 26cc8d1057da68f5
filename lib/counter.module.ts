import { Inject, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { COUNTER_INSTRUMENTS, COUNTER_OPTIONS } from './counter.constants.js';
import { MESSAGES } from './counter.messages.js';
import { CounterConfigurationError } from './exceptions/counter-configuration.error.js';
import { CounterChangeApplier } from './counter-change.applier.js';
import { CounterEntityExplorer } from './counter-entity.explorer.js';
import { ConfigurableModuleClass } from './counter.module-definition.js';
import { CounterOverlay } from './counter.overlay.js';
import { COUNTER_FACTORY_PROVIDERS } from './counter.providers.js';
import { CounterReader } from './counter.reader.js';
import { CounterWindows } from './windows/counter-windows.js';
import { CounterTop } from './windows/counter-top.js';
import { RollingCountOverlay } from './windows/rolling-count.overlay.js';
import { RollingUpkeep } from './windows/rolling.upkeep.js';
import { CounterRegistry } from './counter.registry.js';
import { CounterService } from './counter.service.js';
import { CounterStatusReader } from './counter-status.reader.js';
import { CounterFlushScheduler } from './flush/counter-flush.scheduler.js';
import { CounterFlusher } from './flush/counter.flusher.js';
import { FlushHistory } from './flush/flush.history.js';
import { OutageLog } from './flush/outage.log.js';
import { CounterHealthIndicator } from './health/counter.health-indicator.js';
import { CounterInterceptor } from './interceptors/counter.interceptor.js';
import type { ResolvedCounterOptions } from './interfaces/resolved-counter-options.interface.js';
import type { CounterInstruments } from './metrics/counter.instruments.js';
import { CounterReconciler } from './reconcile/counter.reconciler.js';
import { DataLossRepairer } from './reconcile/data-loss.repairer.js';
import { RefusedChanges } from './reconcile/refused-changes.js';
import { CounterRedisHandle } from './redis/counter-redis.handle.js';
import { EvictionPolicyCheck } from './redis/eviction-policy.check.js';
import { ScriptRunner } from './redis/script.runner.js';
import { CounterDatabase } from './sql/counter.database.js';
import { CounterValueHydrator } from './sql/counter-value.hydrator.js';
import { RowIdCollationCheck } from './sql/row-id-collation.check.js';

/**
 * Exact Redis counters for TypeORM entities. Import with `CounterModule.forRoot(options)` or
 * `CounterModule.forRootAsync({ imports, inject, useFactory })`; inject `CounterService`.
 */
@Module({
  providers: [
    ...COUNTER_FACTORY_PROVIDERS,
    CounterRegistry,
    CounterEntityExplorer,
    CounterDatabase,
    CounterValueHydrator,
    RowIdCollationCheck,
    FlushHistory,
    OutageLog,
    CounterReader,
    CounterWindows,
    RollingUpkeep,
    CounterTop,
    CounterFlusher,
    CounterFlushScheduler,
    CounterChangeApplier,
    CounterOverlay,
    RollingCountOverlay,
    CounterReconciler,
    CounterStatusReader,
    CounterService,
    CounterInterceptor,
    CounterHealthIndicator,
    DataLossRepairer,
    RefusedChanges,
  ],
  exports: [CounterService, CounterInterceptor, CounterHealthIndicator],
})
export class CounterModule extends ConfigurableModuleClass implements OnModuleInit, OnApplicationShutdown {
  private stopObservingBacklog?: () => void;

  constructor(
    private readonly redis: CounterRedisHandle,
    private readonly eviction: EvictionPolicyCheck,
    private readonly runner: ScriptRunner,
    private readonly statusReader: CounterStatusReader,
    @Inject(COUNTER_INSTRUMENTS) private readonly instruments: CounterInstruments,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {
    super();
  }

  async onModuleInit(): Promise<void> {
    await this.redis.waitUntilReady();
    await this.eviction.verify();
    if (this.runner.sendable) await this.runner.aof.prime();
    await this.verifyDurability();
    // The backlog gauges read status() at scrape time, while the module runs.
    this.stopObservingBacklog = this.instruments.observeBacklog(this.options.keyPrefix, () =>
      this.statusReader.status(),
    );
  }

  /** Closes the Redis client only if the module created it; the connections of the AOF waits always. */
  async onApplicationShutdown(): Promise<void> {
    this.stopObservingBacklog?.();
    this.eviction.stop();
    this.runner.close();
    await this.redis.close();
  }

  /**
   * With `durability: 'fsync'`, refuses a Redis whose masters cannot wait for their AOF (no `WAITAOF`,
   * no AOF, a WAITAOF that answers before the fsync). One not reachable yet is not refused: its changes
   * then fail with an unknown outcome where it cannot.
   */
  private async verifyDurability(): Promise<void> {
    if (this.options.durability !== 'fsync' || !this.runner.sendable) return;
    const problems = await this.runner.aof.masterProblems(this.options.keyPrefix);
    if (problems.length > 0) throw new CounterConfigurationError(MESSAGES.durabilityUnsupported(problems));
  }
}
