import type { ConfigService } from '@nestjs/config';
import type { CounterModuleOptions } from 'nestjs-counter';
import { DEFAULT_REDIS_URL } from './app.defaults.js';
import { databaseTarget } from './database.target.js';

/** CounterModule options: Redis from REDIS_URL, keys under `counterKeyPrefix`. */
export function counterOptions(config: ConfigService): CounterModuleOptions {
  return { redis: redisUrl(config), keyPrefix: counterKeyPrefix(config) };
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
