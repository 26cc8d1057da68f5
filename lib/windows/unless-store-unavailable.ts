import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';

/**
 * `read`'s result; undefined when Redis is unreachable, for the live reads that then answer from the
 * database alone, as of the last flush.
 */
export async function unlessStoreUnavailable<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof CounterStoreUnavailableError) return undefined;
    throw error;
  }
}
