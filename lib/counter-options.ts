import {
  COUNTER_DEFAULTS,
  DEFAULT_METRICS_PREFIX,
  HEALTH_DEFAULTS,
  MIN_DEFAULT_FLUSH_LEASE_MS,
} from './counter.constants.js';
import { MESSAGES } from './counter.messages.js';
import { GRANULARITIES, GRANULARITY_SECONDS, type Granularity } from './model/time-bucket.js';
import { CounterConfigurationError } from './exceptions/counter-configuration.error.js';
import type { CounterModuleOptions } from './interfaces/counter-module-options.interface.js';
import type {
  ResolvedCounterOptions,
  ResolvedMetricsOptions,
} from './interfaces/resolved-counter-options.interface.js';
import type { CounterHealthOptions } from './interfaces/counter-health-options.interface.js';

const POSITIVE_INTEGERS = [
  'shards',
  'slotsPerEntity',
  'flushIntervalMs',
  'flushBatchSize',
  'flushConcurrency',
  'flushLeaseMs',
  'flushMaxBackoffMs',
  'cleanRowTtlSeconds',
  'idempotencyTtlSeconds',
  'ledgerRetentionMs',
  'redisCommandTimeoutMs',
  'databaseTimeoutMs',
] as const;

/** A Prometheus metric name's characters (the prefix starts every name). */
const METRIC_PREFIX = /^([a-zA-Z_:][a-zA-Z0-9_:]*)?$/;

/** Applies the defaults once and refuses options that cannot work. */
export function resolveCounterOptions(options: CounterModuleOptions = {}): ResolvedCounterOptions {
  const defined = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const resolved = {
    ...COUNTER_DEFAULTS,
    ...defined,
    flushCron: resolveFlushCron(options),
    metrics: resolveMetrics(options.metrics),
    bucketRetentionMs: resolveBucketRetention(options.bucketRetentionMs),
  } as ResolvedCounterOptions;
  // One interval: a dead flusher's shards are then taken over within about two (G10).
  resolved.flushLeaseMs ??= Math.max(MIN_DEFAULT_FLUSH_LEASE_MS, resolved.flushIntervalMs);
  for (const name of POSITIVE_INTEGERS) {
    const value = resolved[name];
    // Left out, flushBatchSize is the database's default.
    if (name === 'flushBatchSize' && value === undefined) continue;
    if (!Number.isSafeInteger(value) || value === undefined || value <= 0) {
      throw new CounterConfigurationError(MESSAGES.badOption(name, value, 'a positive integer'));
    }
  }
  if (resolved.shards > 16_384) {
    throw new CounterConfigurationError(MESSAGES.badOption('shards', resolved.shards, 'at most 16384'));
  }
  if (typeof resolved.keyPrefix !== 'string' || resolved.keyPrefix === '' || /[{}]/.test(resolved.keyPrefix)) {
    throw new CounterConfigurationError(
      MESSAGES.badOption('keyPrefix', resolved.keyPrefix, 'a non-empty string without "{" or "}"'),
    );
  }
  for (const name of ['tracing', 'repairOnDataLoss', 'acceptLossOnEviction'] as const) {
    if (typeof resolved[name] !== 'boolean') {
      throw new CounterConfigurationError(MESSAGES.badOption(name, resolved[name], 'true or false'));
    }
  }
  if (resolved.durability !== 'none' && resolved.durability !== 'fsync') {
    throw new CounterConfigurationError(MESSAGES.badOption('durability', resolved.durability, "'none' or 'fsync'"));
  }
  return resolved;
}

/** How long buckets are kept per granularity, defaults applied; refuses values that cannot work. */
function resolveBucketRetention(retention: CounterModuleOptions['bucketRetentionMs']): Record<Granularity, number> {
  const defaults = COUNTER_DEFAULTS.bucketRetentionMs;
  const resolved = { hour: retention?.hour ?? defaults.hour, day: retention?.day ?? defaults.day };
  for (const granularity of GRANULARITIES) {
    const value = resolved[granularity];
    // Shorter than a bucket, a bucket would be pruned while it still takes changes.
    if (!Number.isSafeInteger(value) || value < GRANULARITY_SECONDS[granularity] * 1_000) {
      throw new CounterConfigurationError(
        MESSAGES.badOption(
          `bucketRetentionMs.${granularity}`,
          value,
          `a whole number of ms of at least one ${granularity}`,
        ),
      );
    }
  }
  return resolved;
}

/** The options of `CounterHealthIndicator.isHealthy()`, defaults applied; refuses those that cannot work. */
export function resolveHealthOptions(options: CounterHealthOptions = {}): Required<CounterHealthOptions> {
  const resolved = { ...HEALTH_DEFAULTS, ...options };
  for (const name of ['degradedAfterMs', 'downAfterFailedFlushes'] as const) {
    const value = resolved[name];
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new CounterConfigurationError(MESSAGES.badHealthOption(name, value, 'a positive integer'));
    }
  }
  return resolved;
}

/** The cron expression, when given instead of an interval (checked as cron syntax when the job is made). */
function resolveFlushCron({ flushCron, flushIntervalMs }: CounterModuleOptions): string | undefined {
  if (flushCron === undefined) return undefined;
  if (typeof flushCron !== 'string' || flushCron.trim() === '') {
    throw new CounterConfigurationError(MESSAGES.badOption('flushCron', flushCron, 'a cron expression'));
  }
  if (flushIntervalMs !== undefined) throw new CounterConfigurationError(MESSAGES.intervalAndCron());
  return flushCron;
}

function resolveMetrics(metrics: CounterModuleOptions['metrics']): ResolvedMetricsOptions | undefined {
  if (metrics === undefined || metrics === false) return undefined;
  if (metrics === true) return { registry: undefined, prefix: DEFAULT_METRICS_PREFIX };
  if (typeof metrics !== 'object' || metrics === null) {
    throw new CounterConfigurationError(MESSAGES.badOption('metrics', metrics, 'true, false or { registry, prefix }'));
  }
  const { registry, prefix = DEFAULT_METRICS_PREFIX } = metrics;
  if (typeof prefix !== 'string' || !METRIC_PREFIX.test(prefix)) {
    throw new CounterConfigurationError(
      MESSAGES.badOption('metrics.prefix', prefix, 'letters, digits, "_" and ":", not starting with a digit'),
    );
  }
  if (registry !== undefined && typeof (registry as { getSingleMetric?: unknown }).getSingleMetric !== 'function') {
    throw new CounterConfigurationError(MESSAGES.badOption('metrics.registry', registry, 'a prom-client Registry'));
  }
  return { registry, prefix };
}
