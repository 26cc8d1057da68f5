import type { ConfigService } from '@nestjs/config';
import type { CounterModuleOptions } from 'nestjs-counter';
import { COUNTER_METRICS_PREFIX, type CounterMetrics } from '../flush/counter.metrics.js';
import { DEFAULT_REDIS_URL } from './app.defaults.js';
import { databaseTarget } from './database.target.js';

/**
 * CounterModule options: Redis from REDIS_URL, keys under `counterKeyPrefix`, metrics in the app's own
 * registry. The app runs the flush itself (flush/flush.loop.ts), so that the page can pause it and
 * show each flush's report: the module's timer is off, its final flush at shutdown still on.
 */
export function counterOptions(config: ConfigService, metrics: CounterMetrics): CounterModuleOptions {
  return {
    redis: redisUrl(config),
    keyPrefix: counterKeyPrefix(config),
    flushEnabled: false,
    metrics: { registry: metrics.registry, prefix: COUNTER_METRICS_PREFIX },
  };
}

export function redisUrl(config: ConfigService): string {
  return config.get<string>('REDIS_URL') || DEFAULT_REDIS_URL;
}

/**
 * One key prefix per database (`judge:sqlite:1a2b3c4d`), so running the demo against SQLite and then
 * PostgreSQL on one Redis never mixes their counters. COUNTER_KEY_PREFIX overrides it.
 */
export function counterKeyPrefix(config: ConfigService): string {
  const target = databaseTarget(config.get<string>('DATABASE_URL'));
  return config.get<string>('COUNTER_KEY_PREFIX') || `judge:${target.kind}:${target.identity}`;
}
