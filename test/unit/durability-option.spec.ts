import { describe, expect, it } from 'vitest';
import { resolveCounterOptions } from '../../lib/counter-options.js';
import { CounterConfigurationError, type CounterDurability } from '../../lib/index.js';

// `durability`: off unless asked for by name; anything else refused before the module starts.
describe('the durability option', () => {
  it("is 'none' by default and keeps 'fsync'", () => {
    expect(resolveCounterOptions({}).durability).toBe('none');
    expect(resolveCounterOptions({ durability: 'fsync' }).durability).toBe('fsync');
    expect(resolveCounterOptions({ durability: 'none' }).durability).toBe('none');
  });

  it('refuses any other value, naming the two it takes', () => {
    expect(() => resolveCounterOptions({ durability: 'always' as CounterDurability })).toThrow(
      new CounterConfigurationError(`CounterModule option "durability" must be 'none' or 'fsync'; got always.`),
    );
    expect(() => resolveCounterOptions({ durability: true as unknown as CounterDurability })).toThrow(
      CounterConfigurationError,
    );
  });
});
