import { spawnSync } from 'node:child_process';

/**
 * The server binary of the specs and chaos scenarios that need `WAITAOF` (Redis 7.2+, Valkey):
 * `valkey-server` unless COUNTER_WAITAOF_SERVER names another one (a Redis 7.2+ build, say).
 */
export const WAITAOF_SERVER = process.env.COUNTER_WAITAOF_SERVER ?? 'valkey-server';

/**
 * Why the suites that need WAITAOF_SERVER are skipped on this machine: it is not on the PATH, outside
 * CI. Undefined when they run; in CI (`CI` set) always, so that a missing server fails them.
 */
export function waitAofServerMissing(): string | undefined {
  if (process.env.CI) return undefined;
  const found = spawnSync('sh', ['-c', 'command -v "$1"', 'sh', WAITAOF_SERVER]).status === 0;
  if (found) return undefined;
  const reason = `${WAITAOF_SERVER} is not on the PATH: skipping the suites that need WAITAOF (install Valkey 8+, or set COUNTER_WAITAOF_SERVER to a Redis 7.2+ server).`;
  console.warn(reason);
  return reason;
}
