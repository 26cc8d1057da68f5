import { Inject, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { COUNTER_INSTRUMENTS, COUNTER_OPTIONS, COUNTER_TRACER } from './counter.constants.js';
import { CounterChangeApplier } from './counter-change.applier.js';
import { CounterEntityExplorer } from './counter-entity.explorer.js';
import { ConfigurableModuleClass, COUNTER_MODULE_OPTIONS } from './counter.module-definition.js';
import { resolveCounterOptions } from './counter-options.js';
import { CounterReader } from './counter.reader.js';
import { CounterRegistry } from './counter.registry.js';
import { CounterService } from './counter.service.js';
import { CounterFlushScheduler } from './flush/counter-flush.scheduler.js';
import { CounterFlusher } from './flush/counter.flusher.js';
import { FlushHistory } from './flush/flush.history.js';
import { CounterHealthIndicator } from './health/counter.health-indicator.js';
import { CounterInterceptor } from './interceptors/counter.interceptor.js';
import { DataLossRepairer } from './reconcile/data-loss.repairer.js';
import { RefusedChanges } from './reconcile/refused-changes.js';
import type { ResolvedCounterOptions } from './interfaces/resolved-counter-options.interface.js';
import { NO_OP_INSTRUMENTS, type CounterInstruments } from './metrics/counter.instruments.js';
import { PrometheusInstruments } from './metrics/prometheus.instruments.js';
import { CounterKeys } from './redis/counter.keys.js';
import { CounterRedisHandle } from './redis/counter-redis.handle.js';
import { EvictionPolicyCheck } from './redis/eviction-policy.check.js';
import { CounterStore } from './redis/counter.store.js';
import { FlushStore } from './redis/flush.store.js';
import { ScriptRunner } from './redis/script.runner.js';
import { CounterDatabase } from './sql/counter.database.js';
import { CounterValueHydrator } from './sql/counter-value.hydrator.js';
import { NO_OP_TRACER } from './tracing/counter.tracer.js';
import { OpenTelemetryTracer } from './tracing/opentelemetry.tracer.js';

/**
 * Exact Redis counters for TypeORM entities. Import with `CounterModule.forRoot(options)` or
 * `CounterModule.forRootAsync({ imports, inject, useFactory })`; inject `CounterService`.
 */
@Module({
  providers: [
    { provide: COUNTER_OPTIONS, useFactory: resolveCounterOptions, inject: [COUNTER_MODULE_OPTIONS] },
    {
      provide: COUNTER_INSTRUMENTS,
      useFactory: (options: ResolvedCounterOptions) =>
        options.metrics ? PrometheusInstruments.create(options.metrics) : NO_OP_INSTRUMENTS,
      inject: [COUNTER_OPTIONS],
    },
    {
      provide: COUNTER_TRACER,
      useFactory: (options: ResolvedCounterOptions) => (options.tracing ? OpenTelemetryTracer.create() : NO_OP_TRACER),
      inject: [COUNTER_OPTIONS],
    },
    {
      provide: CounterRedisHandle,
      useFactory: (options: ResolvedCounterOptions) =>
        CounterRedisHandle.from(options.redis, options.redisCommandTimeoutMs),
      inject: [COUNTER_OPTIONS],
    },
    {
      provide: ScriptRunner,
      // A claim's WAIT for the replicas must end well within the command timeout.
      useFactory: (redis: CounterRedisHandle, options: ResolvedCounterOptions) =>
        new ScriptRunner(redis.client, Math.floor(options.redisCommandTimeoutMs / 2)),
      inject: [CounterRedisHandle, COUNTER_OPTIONS],
    },
    {
      provide: EvictionPolicyCheck,
      useFactory: (runner: ScriptRunner, options: ResolvedCounterOptions) =>
        new EvictionPolicyCheck(runner, options.acceptLossOnEviction),
      inject: [ScriptRunner, COUNTER_OPTIONS],
    },
    {
      provide: CounterStore,
      useFactory: (runner: ScriptRunner, options: ResolvedCounterOptions) =>
        new CounterStore(runner, options.cleanRowTtlSeconds, options.idempotencyTtlSeconds),
      inject: [ScriptRunner, COUNTER_OPTIONS],
    },
    {
      provide: FlushStore,
      useFactory: (runner: ScriptRunner, instruments: CounterInstruments) => new FlushStore(runner, instruments),
      inject: [ScriptRunner, COUNTER_INSTRUMENTS],
    },
    {
      provide: CounterKeys,
      useFactory: (options: ResolvedCounterOptions) =>
        new CounterKeys(options.keyPrefix, options.shards, options.slotsPerEntity),
      inject: [COUNTER_OPTIONS],
    },
    CounterRegistry,
    CounterEntityExplorer,
    CounterDatabase,
    CounterValueHydrator,
    FlushHistory,
    CounterReader,
    CounterFlusher,
    CounterFlushScheduler,
    CounterChangeApplier,
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
    private readonly counters: CounterService,
    @Inject(COUNTER_INSTRUMENTS) private readonly instruments: CounterInstruments,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {
    super();
  }

  async onModuleInit(): Promise<void> {
    await this.redis.waitUntilReady();
    await this.eviction.verify();
    // The backlog gauges read status() at scrape time, while the module runs.
    this.stopObservingBacklog = this.instruments.observeBacklog(this.options.keyPrefix, () => this.counters.status());
  }

  /** Closes the Redis client only if the module created it. */
  async onApplicationShutdown(): Promise<void> {
    this.stopObservingBacklog?.();
    this.eviction.stop();
    await this.redis.close();
  }
}
