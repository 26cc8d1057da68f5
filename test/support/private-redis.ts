import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** A redis-server of the test's own, on a free loopback port, for faults that must not hit the shared one. */
export class PrivateRedis {
  private constructor(
    readonly port: number,
    private readonly process: ChildProcess,
    private readonly directory: string,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(extraArgs: string[] = []): Promise<PrivateRedis> {
    const port = await freePort();
    const directory = mkdtempSync(join(tmpdir(), 'nestjs-counter-redis-'));
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', directory, ...extraArgs],
      { stdio: 'ignore' },
    );
    const server = new PrivateRedis(port, child, directory);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      try {
        await probe.connect();
        await probe.ping();
        return server;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        probe.disconnect();
      }
    }
  }

  async stop(): Promise<void> {
    if (this.process.exitCode === null) {
      const exited = new Promise((resolve) => this.process.once('exit', resolve));
      this.process.kill('SIGKILL');
      await exited;
    }
    rmSync(this.directory, { recursive: true, force: true });
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
