import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { probeRedis } from './redis.probe.js';

const READY_WITHIN_MS = 5000;
const ATTEMPTS = 3;

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
    private readonly child: ChildProcess,
    readonly directory: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  static async start(): Promise<ThrowawayRedisServer> {
    let failure: Error | undefined;
    // Another process may take the free port before redis-server binds it: try a new one.
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const directory = mkdtempSync(join(tmpdir(), 'judge-redis-'));
      const started = ThrowawayRedisServer.spawn(await freePort(), directory);
      try {
        await started.ready;
        process.once('exit', () => started.server.stop());
        return started.server;
      } catch (error) {
        started.server.stop();
        if (error instanceof RedisServerNotFoundError) throw error;
        failure = error as Error;
      }
    }
    throw failure ?? new Error('redis-server did not start.');
  }

  /** Synchronous, so that it can run in the process's 'exit' event. */
  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    rmSync(this.directory, { recursive: true, force: true });
  }

  private static spawn(port: number, directory: string): { server: ThrowawayRedisServer; ready: Promise<void> } {
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
    const child = spawn('redis-server', args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-2000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const server = new ThrowawayRedisServer(port, child, directory);
    const ready = new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        if (error) reject(error);
        else resolve();
      };
      child.once('error', (error: NodeJS.ErrnoException) =>
        settle(error.code === 'ENOENT' ? new RedisServerNotFoundError('redis-server is not on the PATH.') : error),
      );
      child.once('exit', (code, signal) => {
        const lastLine = output.trim().split('\n').pop() ?? '';
        settle(new Error(`redis-server exited (${signal ?? `code ${code}`}): ${lastLine}`));
      });
      void (async () => {
        const deadline = Date.now() + READY_WITHIN_MS;
        while (!settled && Date.now() < deadline) {
          if ((await probeRedis(server.url)) === undefined) return settle();
          await delay(50);
        }
        settle(new Error(`redis-server did not answer within ${READY_WITHIN_MS} ms.`));
      })();
    });
    return { server, ready };
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
