import type { Cluster, Redis } from 'ioredis';

/** Calls of one command and the server time they took, as `INFO commandstats` counts them. */
export interface CommandCount {
  calls: number;
  usec: number;
}

/** The server's counters for `command` (lower case, e.g. 'evalsha'); zeros before its first call. */
export async function commandCount(client: Redis | Cluster, command: string): Promise<CommandCount> {
  const stats = await client.info('commandstats');
  const match = new RegExp(`^cmdstat_${command}:calls=(\\d+),usec=(\\d+)`, 'm').exec(stats);
  return { calls: Number(match?.[1] ?? 0), usec: Number(match?.[2] ?? 0) };
}

/** Server µs per call between two readings: Redis's own execution time, without network and I/O. */
export function usecPerCall(before: CommandCount, after: CommandCount): number {
  return (after.usec - before.usec) / (after.calls - before.calls);
}
