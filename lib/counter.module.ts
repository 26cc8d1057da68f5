import { Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { COUNTER_OPTIONS } from './counter.constants.js';
import { CounterEntityExplorer } from './counter-entity.explorer.js';
import { ConfigurableModuleClass, COUNTER_MODULE_OPTIONS } from './counter.module-definition.js';
import { resolveCounterOptions } from './counter-options.js';
import { CounterReader } from './counter.reader.js';
import { CounterRegistry } from './counter.registry.js';
import { CounterService } from './counter.service.js';
import { CounterFlushScheduler } from './flush/counter-flush.scheduler.js';
import { CounterFlusher } from './flush/counter.flusher.js';
import { FlushRecord } from './flush/flush.record.js';
import { CounterInterceptor } from './interceptors/counter.interceptor.js';
import type { ResolvedCounterOptions } from './interfaces/counter-module-options.interface.js';
import { CounterKeys } from './redis/counter.keys.js';
import { CounterRedisHandle } from './redis/counter-redis.handle.js';
import { CounterStore } from './redis/counter.store.js';
import { FlushStore } from './redis/flush.store.js';
import { ScriptRunner } from './redis/script.runner.js';
import { CounterDatabase } from './sql/counter.database.js';

/**
 * Exact Redis counters for TypeORM entities. Import with `CounterModule.forRoot(options)` or
 * `CounterModule.forRootAsync({ imports, inject, useFactory })`; inject `CounterService`.
 */
@Module({
  providers: [
    { provide: COUNTER_OPTIONS, useFactory: resolveCounterOptions, inject: [COUNTER_MODULE_OPTIONS] },
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
      provide: CounterStore,
      useFactory: (runner: ScriptRunner, options: ResolvedCounterOptions) =>
        new CounterStore(runner, options.cleanRowTtlSeconds),
      inject: [ScriptRunner, COUNTER_OPTIONS],
    },
    {
      provide: FlushStore,
      useFactory: (runner: ScriptRunner, options: ResolvedCounterOptions) =>
        new FlushStore(runner, options.cleanRowTtlSeconds),
      inject: [ScriptRunner, COUNTER_OPTIONS],
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
    FlushRecord,
    CounterReader,
    CounterFlusher,
    CounterFlushScheduler,
    CounterService,
    CounterInterceptor,
  ],
  exports: [CounterService, CounterInterceptor],
})
export class CounterModule extends ConfigurableModuleClass implements OnModuleInit, OnApplicationShutdown {
  constructor(private readonly redis: CounterRedisHandle) {
    super();
  }

  async onModuleInit(): Promise<void> {
    await this.redis.waitUntilReady();
  }

  /** Closes the Redis client only if the module created it. */
  async onApplicationShutdown(): Promise<void> {
    await this.redis.close();
  }
}
