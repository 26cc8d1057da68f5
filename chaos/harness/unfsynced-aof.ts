// A Redis server that loses, when SIGKILLed, what a machine crash would: the AOF writes not yet fsynced.
// A killed process loses nothing on its own (the kernel keeps what it wrote), so a SIGKILL alone never
// shows what `appendfsync everysec` risks. unfsynced-aof.c, loaded with LD_PRELOAD, holds the server's
// writes to its incremental AOF in memory until the server fsyncs them; the kill drops the rest.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RESP2 } from '../../support/redis.js';
import { RedisServer } from '../../support/redis-server.js';
import type { ChaosDeployment } from './chaos-deployment.js';

const SHIM_SOURCE = fileURLToPath(new URL('unfsynced-aof.c', import.meta.url));

/**
 * `binary` (a server name on the PATH, or a path) run with the shim: a script to give RedisServer as
 * its binary, in a directory removed with the deployment. Needs a C compiler (`cc`).
 */
export function withUnfsyncedAofLoss(deployment: ChaosDeployment, binary: string): string {
  const directory = mkdtempSync(join(tmpdir(), 'nestjs-counter-unfsynced-'));
  deployment.onClose(() => rmSync(directory, { recursive: true, force: true }));
  const shim = join(directory, 'unfsynced-aof.so');
  const compiled = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-o', shim, SHIM_SOURCE, '-ldl', '-lpthread'], {
    encoding: 'utf8',
  });
  if (compiled.status !== 0)
    throw new Error(`cc could not build unfsynced-aof.c: ${compiled.stderr || compiled.error}`);
  const wrapper = join(directory, 'server');
  writeFileSync(wrapper, `#!/bin/sh\nLD_PRELOAD='${shim}' exec '${binary}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}

/**
 * A server of the deployment's own on `port`, `appendonly yes` with `appendfsync everysec`, that loses its
 * unfsynced AOF writes when killed, and the parent's client of it (see `privateRedisFor`).
 */
export async function crashableServerFor(
  deployment: ChaosDeployment,
  binary: string,
  port: number,
): Promise<{ server: RedisServer; inspector: Redis }> {
  const server = await RedisServer.start({
    port,
    binary: withUnfsyncedAofLoss(deployment, binary),
    args: ['--appendonly', 'yes', '--appendfsync', 'everysec'],
  });
  deployment.onClose(() => server.stop());
  const inspector = new Redis(server.url, { ...RESP2, maxRetriesPerRequest: 1 });
  inspector.on('error', () => undefined);
  deployment.onClose(() => inspector.disconnect());
  return { server, inspector };
}

/**
 * Resolves once everything the server acknowledged so far is fsynced to its AOF: a write under
 * `appendfsync always` (fsynced, with all before it, before its reply), then `everysec` again. Not
 * WAITAOF: under `everysec`, Valkey 8.0 and Redis 7.4.0-7.4.2 may answer it before the fsync
 * (redis/redis#13793).
 */
export async function fsyncedSoFar(inspector: Redis): Promise<void> {
  await inspector.config('SET', 'appendfsync', 'always');
  try {
    await inspector.set('nestjs-counter-chaos:fsync-mark', '1', 'PX', 60_000);
  } finally {
    await inspector.config('SET', 'appendfsync', 'everysec');
  }
}
