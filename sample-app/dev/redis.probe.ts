import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';

const TIMEOUT_MS = 2000;

/**
 * Connects to Redis once and pings it, within 2 s. Resolves with undefined when Redis answers, or with
 * one sentence that says what is wrong.
 */
export async function probeRedis(url: string): Promise<string | undefined> {
  let cause: Error | undefined; // the socket error; connect() itself only rejects with "Connection is closed."
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', (error: Error) => (cause ??= error)); // reported below, not as an unhandled event
  const deadline = new AbortController();
  try {
    // A server that accepts the connection but never answers would hang connect() or PING: race a timer.
    await Promise.race([
      client.connect().then(() => client.ping()),
      delay(TIMEOUT_MS, undefined, { signal: deadline.signal }).then(() => {
        throw new Error(`no answer within ${TIMEOUT_MS} ms`);
      }),
    ]);
    return undefined;
  } catch (error) {
    return `Cannot reach Redis at ${redact(url)} (${(cause ?? (error as Error)).message}).`;
  } finally {
    deadline.abort();
    client.disconnect();
  }
}

/** The URL without its password, fit for a log line. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
