import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

/** A redis-server of the test's own, on a free loopback port, for faults that must not hit the shared one. */
export class PrivateRedis {
  private constructor(
    readonly port: number,
    private process: ChildProcess,
    private readonly directory: string,
    private readonly args: string[],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(extraArgs: string[] = []): Promise<PrivateRedis> {
    const port = await freePort();
    const directory = mkdtempSync(join(tmpdir(), 'nestjs-counter-redis-'));
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
      ...extraArgs,
    ];
    const server = new PrivateRedis(port, spawn('redis-server', args, { stdio: 'ignore' }), directory, args);
    await server.ready();
    return server;
  }

  /**
   * Starts a new, empty redis-server on the same port (killing the running one first, if any): clients
   * that reconnect to `url` find a Redis again, without its data. Works after `stop()` too.
   */
  async restart(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      const exited = new Promise((resolve) => this.process.once('exit', resolve));
      this.process.kill('SIGKILL');
      await exited;
    }
    mkdirSync(this.directory, { recursive: true });
    this.process = spawn('redis-server', this.args, { stdio: 'ignore' });
    await this.ready();
  }

  private async ready(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      // Refused until the server listens: connect() rejects with it; no need for ioredis to print it too.
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        await probe.ping();
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        probe.disconnect();
      }
    }
  }

  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      const exited = new Promise((resolve) => this.process.once('exit', resolve));
      this.process.kill('SIGKILL');
      await exited;
    }
    rmSync(this.directory, { recursive: true, force: true });
  }
}
