import type { Provider } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { COUNTER_DATA_SOURCE, COUNTER_INSTRUMENTS, COUNTER_OPTIONS, COUNTER_TRACER } from './counter.constants.js';
import { COUNTER_MODULE_OPTIONS } from './counter.module-definition.js';
import { resolveCounterOptions } from './counter-options.js';
import type { ResolvedCounterOptions } from './interfaces/resolved-counter-options.interface.js';
import { NO_OP_INSTRUMENTS, type CounterInstruments } from './metrics/counter.instruments.js';
import { PrometheusInstruments } from './metrics/prometheus.instruments.js';
import { CounterKeys } from './redis/counter.keys.js';
import { CounterRedisHandle } from './redis/counter-redis.handle.js';
import { CounterStore } from './redis/counter.store.js';
import { EvictionPolicyCheck } from './redis/eviction-policy.check.js';
import { FlushStore } from './redis/flush.store.js';
import { BucketStore } from './redis/bucket.store.js';
import { BucketScanStore } from './redis/bucket-scan.store.js';
import { RollingCountStore } from './redis/rolling-count.store.js';
import { IncrementBatcher } from './redis/increment.batcher.js';
import { ScriptRunner } from './redis/script.runner.js';
import { CountedRowsQuery } from './sql/counted-rows.query.js';
import { CounterDatabase } from './sql/counter.database.js';
import { NO_OP_TRACER } from './tracing/counter.tracer.js';
import { OpenTelemetryTracer } from './tracing/opentelemetry.tracer.js';

/**
 * The providers made by a factory from the resolved options (or from another provider); the classes Nest
 * builds on its own are listed in `CounterModule`.
 */
export const COUNTER_FACTORY_PROVIDERS: Provider[] = [
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
      new CounterStore(runner, options.cleanRowTtlSeconds),
    inject: [ScriptRunner, COUNTER_OPTIONS],
  },
  {
    provide: IncrementBatcher,
    useFactory: (runner: ScriptRunner, options: ResolvedCounterOptions) =>
      new IncrementBatcher(runner, options.cleanRowTtlSeconds, options.idempotencyTtlSeconds, options.durability),
    inject: [ScriptRunner, COUNTER_OPTIONS],
  },
  {
    provide: FlushStore,
    useFactory: (runner: ScriptRunner, instruments: CounterInstruments) => new FlushStore(runner, instruments),
    inject: [ScriptRunner, COUNTER_INSTRUMENTS],
  },
  {
    provide: BucketStore,
    useFactory: (runner: ScriptRunner) => new BucketStore(runner),
    inject: [ScriptRunner],
  },
  {
    provide: BucketScanStore,
    useFactory: (runner: ScriptRunner) => new BucketScanStore(runner),
    inject: [ScriptRunner],
  },
  {
    provide: RollingCountStore,
    useFactory: (runner: ScriptRunner) => new RollingCountStore(runner),
    inject: [ScriptRunner],
  },
  {
    provide: CounterKeys,
    useFactory: (options: ResolvedCounterOptions) =>
      new CounterKeys(options.keyPrefix, options.shards, options.slotsPerEntity),
    inject: [COUNTER_OPTIONS],
  },
  {
    provide: CountedRowsQuery,
    useFactory: (dataSource: DataSource, database: CounterDatabase) =>
      new CountedRowsQuery(dataSource, database.dialect),
    inject: [COUNTER_DATA_SOURCE, CounterDatabase],
  },
];
