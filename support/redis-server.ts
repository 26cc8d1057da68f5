import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';

const HOST = '127.0.0.1';
const READY_WITHIN_MS = 10_000;
const ATTEMPTS = 3;
const NOT_FOUND_EXIT_CODE = 127;

/**
 * The server binary every test, chaos scenario and bench starts: `redis-server` unless
 * COUNTER_REDIS_SERVER names another one (`valkey-server`), so one suite runs on either server.
 */
export const SERVER_BINARY = process.env.COUNTER_REDIS_SERVER ?? 'redis-server';

/**
 * Runs the server binary (the first argument) with the arguments after the directory (the second), and
 * stops it (and removes the directory) when its standard input, a pipe from the process that started
 * it, reaches end of file: that process's exit closes the pipe whatever the exit, a SIGKILL included.
 */
const WATCHDOG = `
binary=$1
directory=$2
shift 2
command -v "$binary" >/dev/null || exit ${NOT_FOUND_EXIT_CODE}
"$binary" "$@" </dev/null &
redis=$!
# A background job reads /dev/null unless told otherwise: it gets the pipe as descriptor 3.
exec 3<&0
(cat <&3 >/dev/null; kill "$redis" 2>/dev/null) &
wait "$redis"
rm -rf "$directory"
`;

export interface RedisServerOptions {
  /** Default: a free loopback port (another one is tried if something took it before redis-server). */
  port?: number;
  /** More redis-server arguments; of an argument given twice (`--dir`, say), the last wins. */
  args?: string[];
  /** The server binary: SERVER_BINARY unless given (a test that needs one server's feature names it). */
  binary?: string;
  /** Prefix of the server's temporary directory's name. */
  directoryPrefix?: string;
  /** Environment variables the server gets besides this process's (an LD_PRELOAD, say). */
  env?: Record<string, string>;
  /**
   * Stops the server and removes its directory when this process exits, however it exits (SIGKILL
   * included), and keeps the server out of this process's group, so that a Ctrl-C in the terminal
   * reaches only this process, which may still need the server while it shuts down.
   */
  tiedToThisProcess?: boolean;
}

/** redis-server is not on the PATH. */
export class RedisServerNotFoundError extends Error {
  override name = this.constructor.name;
}

/**
 * One redis-server on loopback, without persistence unless `args` ask for it: started in a temporary
 * directory of its own, or an already running one (`attach`). The faults a test or a chaos scenario
 * injects into a server are its methods: `kill` it with a signal, `restart` it on the same port.
 */
export class RedisServer {
  private process?: ChildProcess;
  private currentPid = 0;

  private constructor(
    readonly port: number,
    private readonly args: string[],
    /** The temporary directory this object made and removes on `stop()`, if any. */
    readonly directory: string | undefined,
    private readonly tied: boolean,
    /** The binary it runs: `redis-server`, `valkey-server` or a path. */
    readonly binary: string = SERVER_BINARY,
    private readonly env: Record<string, string> = {},
  ) {}

  get url(): string {
    return `redis://${HOST}:${this.port}`;
  }

  /** The redis-server process's id (a new one after each `restart`). */
  get pid(): number {
    return this.currentPid;
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    let failure: Error | undefined;
    for (let attempt = 0; attempt < (options.port === undefined ? ATTEMPTS : 1); attempt++) {
      const port = options.port ?? (await freePort());
      const directory = mkdtempSync(join(tmpdir(), options.directoryPrefix ?? 'nestjs-counter-redis-'));
      const args = ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', directory];
      const server = new RedisServer(
        port,
        [...args, ...(options.args ?? [])],
        directory,
        !!options.tiedToThisProcess,
        options.binary,
        options.env,
      );
      try {
        await server.launch();
        return server;
      } catch (error) {
        await server.stop();
        if (error instanceof RedisServerNotFoundError) throw error;
        failure = error as Error;
      }
    }
    throw failure;
  }

  /**
   * The server already running on `port` (a node of the local cluster, say), with the arguments it was
   * started with read from its configuration, so that `restart()` starts it again the same way.
   */
  static async attach(port: number, settings: string[]): Promise<RedisServer> {
    const args = ['--port', String(port), '--bind', HOST, '--daemonize', 'yes'];
    await withClient(port, async (client) => {
      for (const name of settings) args.push(`--${name}`, ((await client.config('GET', name)) as string[])[1] ?? '');
    });
    const server = new RedisServer(port, args, undefined, false);
    server.currentPid = await processIdOf(port);
    return server;
  }

  /**
   * Sends `signal` to the server (SIGKILL: it dies at once; SIGTERM: it shuts down as it would be asked
   * to, writing its AOF) and resolves once its process is gone, with when the signal was sent and when
   * the process was seen gone (epoch ms). The directory stays, for `restart()`.
   */
  async kill(
    signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL',
    timeoutMs = 10_000,
  ): Promise<{ signalledAt: number; goneAt: number }> {
    const pid = this.currentPid;
    // process.kill(0) would signal this whole process group.
    if (pid <= 0) throw new Error(`redis-server on port ${this.port} has not started`);
    const signalledAt = Date.now();
    process.kill(pid, signal);
    const deadline = signalledAt + timeoutMs;
    while (isRunning(pid)) {
      if (Date.now() > deadline) throw new Error(`redis-server ${pid} still runs ${timeoutMs} ms after ${signal}`);
      await sleep(5);
    }
    return { signalledAt, goneAt: Date.now() };
  }

  /**
   * Starts the server again on the same port, directory and arguments, killing the running one first if
   * there is one: clients that reconnect to `url` find a Redis again, empty unless it persisted its data.
   */
  async restart(): Promise<void> {
    if (this.running) await this.kill('SIGKILL');
    if (this.directory) mkdirSync(this.directory, { recursive: true });
    await this.launch();
  }

  /** Kills the server if it runs and removes the directory this object made. */
  async stop(): Promise<void> {
    if (this.tied) stopGroup(this.process);
    else if (this.running) await this.kill('SIGKILL');
    // Started but never answered: known by its child process only.
    else if (this.process?.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
    if (this.directory) rmSync(this.directory, { recursive: true, force: true });
  }

  private get running(): boolean {
    return this.currentPid > 0 && isRunning(this.currentPid);
  }

  private async launch(): Promise<void> {
    const env = { ...process.env, ...this.env };
    const child = this.tied
      ? // Its own process group: a Ctrl-C in the terminal reaches only this process.
        spawn('/bin/sh', ['-c', WATCHDOG, 'sh', this.binary, this.directory ?? '', ...this.args], {
          detached: true,
          stdio: ['pipe', 'pipe', 'pipe'],
          env,
        })
      : spawn(this.binary, this.args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.process = child;
    // redis-server logs to its standard output: the last line says why it stopped, if it did.
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    let exited: Error | undefined;
    child.once('error', (error: NodeJS.ErrnoException) => {
      exited = error.code === 'ENOENT' ? new RedisServerNotFoundError(`${this.binary} is not on the PATH.`) : error;
    });
    child.once('exit', (code, signal) => {
      if (code === NOT_FOUND_EXIT_CODE) exited = new RedisServerNotFoundError(`${this.binary} is not on the PATH.`);
      // A daemonizing server's first process exits at once, and fine: the server answers all the same.
      else if (code !== 0 || this.tied)
        exited = new Error(`redis-server exited (${signal ?? `code ${code}`}): ${lastLine(output)}`);
    });
    const deadline = Date.now() + READY_WITHIN_MS;
    for (;;) {
      if (exited) throw exited;
      const pid = await processIdOf(this.port).catch(() => 0);
      if (pid > 0) {
        this.currentPid = pid;
        return;
      }
      if (Date.now() > deadline) throw new Error(`redis-server did not answer within ${READY_WITHIN_MS} ms.`);
      await sleep(50);
    }
  }
}

/** The pid the server on `port` reports (`INFO server`); rejects while nothing answers there. */
async function processIdOf(port: number): Promise<number> {
  return withClient(port, async (client) => {
    const pid = Number(/^process_id:(\d+)/m.exec(await client.info('server'))?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0) throw new Error(`no process_id in INFO of port ${port}`);
    return pid;
  });
}

/** A one-shot connection that fails at once instead of retrying, closed after `use`. */
async function withClient<T>(port: number, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: HOST, port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // Refused until the server listens: connect() rejects with it; no need for ioredis to print it too.
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}

/** Whether the process exists (its parent reaps it once it has died: node, the watchdog shell or init). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
  return true;
}

/** Stops the watchdog shell, redis-server and the pipe reader at once: they share the process group. */
function stopGroup(child: ChildProcess | undefined): void {
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    // The group is gone already.
  }
}

function lastLine(output: string): string {
  return output.trim().split('\n').pop() ?? '';
}
