import { describe, expect, it } from 'vitest';
import { resolveCounterOptions } from '../../lib/counter-options.js';
import { CounterConfigurationError } from '../../lib/index.js';

// G10: the lease a flusher holds (renewed while it works) defaults to one flush interval, at least 1 s.
describe('flushLeaseMs', () => {
  it('defaults to the flush interval, at least 1000 ms', () => {
    expect(resolveCounterOptions({}).flushLeaseMs).toBe(1_000);
    expect(resolveCounterOptions({ flushIntervalMs: 5_000 }).flushLeaseMs).toBe(5_000);
    expect(resolveCounterOptions({ flushIntervalMs: 200 }).flushLeaseMs).toBe(1_000);
    expect(resolveCounterOptions({ flushCron: '*/15 * * * * *' }).flushLeaseMs).toBe(1_000);
  });

  it('keeps a lease given, and refuses one that is not a positive integer', () => {
    expect(resolveCounterOptions({ flushLeaseMs: 30_000, flushIntervalMs: 500 }).flushLeaseMs).toBe(30_000);
    expect(resolveCounterOptions({ flushLeaseMs: undefined }).flushLeaseMs).toBe(1_000);
    expect(() => resolveCounterOptions({ flushLeaseMs: 0 })).toThrow(CounterConfigurationError);
    expect(() => resolveCounterOptions({ flushLeaseMs: 1.5 })).toThrow(CounterConfigurationError);
  });
});
