import type { Redis } from 'ioredis';

/** What a Redis server offers to wait for its append-only file (AOF). */
export interface AofSupport {
  /** The server has `WAITAOF` (Redis 7.2 and later, Valkey). */
  waitAof: boolean;
  /** Its AOF is on (`appendonly yes`): `WAITAOF` with numlocal 1 is refused otherwise. */
  appendOnly: boolean;
}

/** The first Redis version with `WAITAOF`; Valkey reports `redis_version:7.2.4`, which it forked from. */
const WAITAOF_SINCE = [7, 2];

/**
 * What `server` offers, from `COMMAND INFO waitaof` (a server that renamed or removed the command
 * answers nil), or from its version where the ACL refuses `COMMAND`, and from `INFO persistence`
 * (`aof_enabled`), which the documented ACL allows. A failure to read (a connection lost) rejects.
 */
export async function readAofSupport(server: Redis): Promise<AofSupport> {
  const [commandInfo, info] = await Promise.all([
    (server.call('command', 'info', 'waitaof') as Promise<unknown[]>).catch((error: Error) =>
      error.name === 'ReplyError' ? undefined : Promise.reject(error),
    ),
    server.info(),
  ]);
  const waitAof = commandInfo ? commandInfo[0] != null : versionHasWaitAof(infoField(info, 'redis_version'));
  return { waitAof, appendOnly: infoField(info, 'aof_enabled') === '1' };
}

function versionHasWaitAof(version: string | undefined): boolean {
  const [major = 0, minor = 0] = (version ?? '').split('.').map(Number);
  return major > WAITAOF_SINCE[0] || (major === WAITAOF_SINCE[0] && minor >= WAITAOF_SINCE[1]);
}

function infoField(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1];
}
