import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { resolveCounterOptions } from '../../lib/counter-options.js';
import { CounterConfigurationError } from '../../lib/index.js';
import { missingPeer } from '../../lib/optional-peer.js';

// The options of metrics, tracing and flushCron, resolved and refused before anything is loaded.
describe('observability options', () => {
  it('leaves metrics, tracing and flushCron off by default', () => {
    expect(resolveCounterOptions({})).toMatchObject({ metrics: undefined, tracing: false, flushCron: undefined });
  });

  it('resolves metrics to a registry and a prefix', () => {
    const registry = new Registry();
    expect(resolveCounterOptions({ metrics: true }).metrics).toEqual({
      registry: undefined,
      prefix: 'nestjs_counter_',
    });
    expect(resolveCounterOptions({ metrics: { registry, prefix: 'app_' } }).metrics).toEqual({
      registry,
      prefix: 'app_',
    });
    expect(resolveCounterOptions({ metrics: false }).metrics).toBeUndefined();
  });

  it('refuses a metric prefix Prometheus does not take, a registry that is not one, and a non-boolean tracing', () => {
    expect(() => resolveCounterOptions({ metrics: { prefix: '1x-' } })).toThrow(
      new CounterConfigurationError(
        'CounterModule option "metrics.prefix" must be letters, digits, "_" and ":", not starting with a digit; got 1x-.',
      ),
    );
    expect(() => resolveCounterOptions({ metrics: { registry: {} as Registry } })).toThrow(CounterConfigurationError);
    expect(() => resolveCounterOptions({ tracing: 'yes' as unknown as boolean })).toThrow(
      'CounterModule option "tracing" must be true or false; got yes.',
    );
  });

  it('takes flushCron instead of flushIntervalMs, never both', () => {
    expect(resolveCounterOptions({ flushCron: '* * * * * *' })).toMatchObject({
      flushCron: '* * * * * *',
      flushIntervalMs: 1_000,
    });
    expect(() => resolveCounterOptions({ flushCron: '* * * * * *', flushIntervalMs: 1_000 })).toThrow(
      CounterConfigurationError,
    );
  });

  it('turns a missing optional peer into a CounterConfigurationError naming it, and passes other errors on', async () => {
    const missing = Object.assign(new Error("Cannot find package 'prom-client'"), { code: 'ERR_MODULE_NOT_FOUND' });
    const rejected = Promise.reject(missing).catch(missingPeer('prom-client', 'CounterModule option "metrics"'));
    await expect(rejected).rejects.toThrow(
      new CounterConfigurationError(
        'CounterModule option "metrics" needs the package prom-client, which is not installed: install it ' +
          '(npm install prom-client), or do without the feature.',
      ),
    );
    const other = new SyntaxError('broken');
    await expect(Promise.reject(other).catch(missingPeer('prom-client', 'x'))).rejects.toBe(other);
  });
});
