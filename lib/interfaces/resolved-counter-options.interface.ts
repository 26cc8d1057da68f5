import type { Granularity } from '../model/time-bucket.js';
import type {
  CounterMetricsRegistry,
  CounterModuleOptions,
  CounterRedisConnection,
} from './counter-module-options.interface.js';

// Internal: what the module's providers work with; not exported from the package root.
/** Options after defaults were applied: what the module's providers work with. */
export type ResolvedCounterOptions = Required<
  Omit<CounterModuleOptions, 'redis' | 'flushBatchSize' | 'flushCron' | 'metrics' | 'bucketRetentionMs'>
> & {
  /** Per granularity. */
  bucketRetentionMs: Record<Granularity, number>;
  redis: CounterRedisConnection;
  /** Undefined: the database's default (see `CounterDatabase.flushBatchSize`). */
  flushBatchSize: number | undefined;
  /** Undefined: the flush runs every `flushIntervalMs`. */
  flushCron: string | undefined;
  /** Undefined: metrics are off. */
  metrics: ResolvedMetricsOptions | undefined;
};

export interface ResolvedMetricsOptions {
  /** Undefined: prom-client's global `register`. */
  registry: CounterMetricsRegistry | undefined;
  prefix: string;
}
