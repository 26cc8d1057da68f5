import calculateSlot from 'cluster-key-slot';
import type { Redis } from 'ioredis';

/** How long the probe's waits may take: an `everysec` fsync comes within about a second. */
const PROBE_WAIT_MS = 2_500;

/**
 * Under `everysec` a correct server fsyncs at most once a second, so a write made just after one fsync
 * waits most of a second for the next; a server with redis/redis#13793's bug (Valkey 8.0, Redis
 * 7.4.0-7.4.2) answers WAITAOF at its next event-loop turn, before any fsync. Faster than this is taken
 * for the bug (or a disk so slow that its last fsync took most of a second: refused all the same).
 */
const EARLIEST_NEXT_FSYNC_MS = 300;

/**
 * Why `connection`'s server cannot make a change durable before it resolves, or undefined when it can:
 * two writes of `key`, each followed by `WAITAOF 1 0` on the same connection; the first must be
 * confirmed, the second must wait for the next fsync.
 */
export async function fsyncWaitProblem(connection: Redis, key: string): Promise<string | undefined> {
  const [first] = await waitAfterWrite(connection, key, '1');
  if (first < 1) return `no fsync within ${PROBE_WAIT_MS} ms (appendfsync no?)`;
  const started = performance.now();
  await waitAfterWrite(connection, key, '2');
  if (performance.now() - started >= EARLIEST_NEXT_FSYNC_MS) return undefined;
  return (
    'WAITAOF answered before the next fsync: the server confirms writes not yet on disk under appendfsync ' +
    'everysec (redis/redis#13793), or appendfsync is always, where this option is not needed'
  );
}

/** A key under `prefix` in a slot `serves` accepts (any slot without it). */
export function probeKey(prefix: string, serves?: (slot: number) => boolean): string {
  for (let tag = 0; tag < 100_000; tag++) {
    const key = `${prefix}:aof-probe:{${tag}}`;
    if (!serves || serves(calculateSlot(key))) return key;
  }
  throw new Error('No key found for a slot of the Redis node.');
}

function waitAfterWrite(connection: Redis, key: string, value: string): Promise<[number, number]> {
  // One write on one connection: the wait covers the write.
  return Promise.all([
    connection.set(key, value, 'PX', 60_000),
    connection.call('waitaof', 1, 0, PROBE_WAIT_MS) as Promise<[number, number]>,
  ]).then(([, confirmed]) => confirmed);
}
