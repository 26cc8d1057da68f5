import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { probeRedis } from './redis.probe.js';

const READY_WITHIN_MS = 5000;
const ATTEMPTS = 3;
const NOT_FOUND_EXIT_CODE = 127;

/**
 * Runs redis-server with the arguments after the directory, and stops it (and removes the directory)
 * when its standard input, a pipe from the app, reaches end of file: the app's exit closes the pipe
 * whatever the exit, a SIGKILL included.
 */
const WATCHDOG = `
directory=$1
shift
command -v redis-server >/dev/null || exit ${NOT_FOUND_EXIT_CODE}
redis-server "$@" </dev/null &
redis=$!
echo "redis-server pid $redis"
# A background job reads /dev/null unless told otherwise: it gets the pipe as descriptor 3.
exec 3<&0
(cat <&3 >/dev/null; kill "$redis" 2>/dev/null) &
wait "$redis"
rm -rf "$directory"
`;

/** redis-server is not on the PATH. */
export class RedisServerNotFoundError extends Error {
  override name = this.constructor.name;
}

/**
 * A private redis-server for the sample app when no Redis answers: loopback only, no persistence, on a
 * free port, in a temporary directory of its own, stopped (and the directory removed) when the app's
 * process exits.
 */
export class ThrowawayRedisServer {
  private constructor(
    readonly port: number,
    private readonly watchdog: ChildProcess,
    readonly directory: string,
    readonly pid: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<ThrowawayRedisServer> {
    let failure: Error | undefined;
    // Another process may take the free port before redis-server binds it: try a new one.
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const directory = mkdtempSync(join(tmpdir(), 'judge-redis-'));
      const watchdog = ThrowawayRedisServer.spawnWatchdog(await freePort(), directory);
      try {
        const server = await ThrowawayRedisServer.ready(watchdog.child, watchdog.port, directory);
        process.once('exit', () => server.stop());
        return server;
      } catch (error) {
        stopGroup(watchdog.child);
        rmSync(directory, { recursive: true, force: true });
        if (error instanceof RedisServerNotFoundError) throw error;
        failure = error as Error;
      }
    }
    throw failure ?? new Error('redis-server did not start.');
  }

  /** Synchronous, so that it can run in the process's 'exit' event. */
  stop(): void {
    stopGroup(this.watchdog);
    rmSync(this.directory, { recursive: true, force: true });
  }

  private static spawnWatchdog(port: number, directory: string): { child: ChildProcess; port: number } {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      directory,
    ];
    // Its own process group: a Ctrl-C in the terminal reaches only the app, whose final flush needs Redis.
    const child = spawn('/bin/sh', ['-c', WATCHDOG, 'sh', directory, ...args], {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return { child, port };
  }

  /** Resolves once redis-server answers, with its pid; rejects when it exits or stays silent. */
  private static ready(child: ChildProcess, port: number, directory: string): Promise<ThrowawayRedisServer> {
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (result: ThrowawayRedisServer | Error) => {
        if (settled) return;
        settled = true;
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      child.once('error', (error) => settle(error));
      child.once('exit', (code, signal) => {
        if (code === NOT_FOUND_EXIT_CODE)
          return settle(new RedisServerNotFoundError('redis-server is not on the PATH.'));
        const lastLine = output.trim().split('\n').pop() ?? '';
        settle(new Error(`redis-server exited (${signal ?? `code ${code}`}): ${lastLine}`));
      });
      void (async () => {
        const deadline = Date.now() + READY_WITHIN_MS;
        while (!settled && Date.now() < deadline) {
          const pid = Number(/^redis-server pid (\d+)$/m.exec(output)?.[1]);
          if (pid && (await probeRedis(`redis://127.0.0.1:${port}`)) === undefined) {
            return settle(new ThrowawayRedisServer(port, child, directory, pid));
          }
          await delay(50);
        }
        settle(new Error(`redis-server did not answer within ${READY_WITHIN_MS} ms.`));
      })();
    });
  }
}

/** Stops the watchdog shell, redis-server and the pipe reader at once: they share the process group. */
function stopGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    // The group is gone already.
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
