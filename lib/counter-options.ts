import { COUNTER_DEFAULTS } from './counter.constants.js';
import { MESSAGES } from './counter.messages.js';
import { CounterConfigurationError } from './exceptions/counter-configuration.error.js';
import type { CounterModuleOptions, ResolvedCounterOptions } from './interfaces/counter-module-options.interface.js';

const POSITIVE_INTEGERS = [
  'shards',
  'slotsPerEntity',
  'flushIntervalMs',
  'flushBatchSize',
  'flushConcurrency',
  'flushLeaseMs',
  'flushMaxBackoffMs',
  'cleanRowTtlSeconds',
  'ledgerRetentionMs',
  'redisCommandTimeoutMs',
  'databaseTimeoutMs',
] as const;

/** Applies the defaults once and refuses options that cannot work. */
export function resolveCounterOptions(options: CounterModuleOptions = {}): ResolvedCounterOptions {
  const defined = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const resolved = { ...COUNTER_DEFAULTS, ...defined } as ResolvedCounterOptions;
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
  return resolved;
}
