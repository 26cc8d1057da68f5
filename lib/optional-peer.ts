import { MESSAGES } from './counter.messages.js';
import { CounterConfigurationError } from './exceptions/counter-configuration.error.js';

/**
 * For the `.catch()` of the dynamic `import()` of an optional peer: a missing package becomes a
 * `CounterConfigurationError` naming what needs it (`usedBy`); any other failure passes through.
 */
export function missingPeer(name: string, usedBy: string): (error: unknown) => never {
  return (error) => {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new CounterConfigurationError(MESSAGES.missingPeer(name, usedBy), { cause: error });
    }
    throw error;
  };
}
