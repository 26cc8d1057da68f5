import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../support/free-port.js';
import { RESP2 } from '../../support/redis.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);

/** The sample app as `npm start` runs it: the library, the app and its launcher compiled, then plain node. */
function compileSampleApp(): void {
  const tsc = require.resolve('typescript/bin/tsc');
  for (const project of ['tsconfig.build.json', 'sample-app/tsconfig.json', 'sample-app/dev/tsconfig.json']) {
    try {
      execFileSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'pipe' });
    } catch (error) {
      const { stdout } = error as { stdout?: Buffer };
      throw new Error(`compiling ${project} failed:\n${stdout?.toString() ?? ''}`, { cause: error });
    }
  }
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface RunningApp {
  child: ChildProcess;
  output: () => string;
  exited: Promise<Exit>;
}

/** `npm start`'s last step: the launcher, which runs the app's main. */
function startApp(env: Record<string, string>): RunningApp {
  const child = spawn(process.execPath, ['sample-app/dev/dist/sample-app/dev/start.js', 'sample-app/dist/main.js'], {
    cwd: root,
    env,
    stdio: 'pipe',
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => output, exited };
}

async function waitFor(app: RunningApp, pattern: RegExp): Promise<RegExpMatchArray> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const match = app.output().match(pattern);
    if (match) return match;
    if (Date.now() > deadline || app.child.exitCode !== null) {
      throw new Error(`the app never printed ${pattern}; it printed:\n${app.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A process that has exited, or died and waits to be reaped (state Z), is gone. */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

// The README's first command on a machine where Redis is installed but not running: `npm start` starts
// a private, loopback-only, throwaway Redis, says so in one line, and stops it when the app exits,
// after the final flush; without redis-server it says in one line how to get a Redis.
describe('the sample app without a Redis to reach', () => {
  let directory: string;

  beforeAll(() => {
    compileSampleApp();
    directory = mkdtempSync(join(tmpdir(), 'nestjs-counter-sample-'));
  }, 180_000);

  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  const environment = async (name: string) => ({
    PATH: process.env.PATH ?? '',
    // A port nothing listens on: freePort closes its listener before answering.
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    DATABASE_URL: `sqlite://${join(directory, `${name}.sqlite`)}`,
    PORT: String(await freePort()),
  });

  /** Starts the app and waits until it serves, checking the throwaway Redis it reports. */
  async function startWithThrowawayRedis(env: Record<string, string>) {
    const app = startApp(env);
    const [, url, pid] = await waitFor(
      app,
      /started a throwaway Redis at (redis:\/\/127\.0\.0\.1:\d+) \(pid (\d+); loopback only, no persistence/,
    );
    await waitFor(app, /Online judge listening/);
    expect(app.output()).toContain(`Nothing answers at ${env.REDIS_URL}`);
    const redis = new Redis(url as string, RESP2);
    try {
      // Loopback only, no persistence, a directory of its own.
      const setting = async (name: string) => ((await redis.config('GET', name)) as string[])[1] as string;
      expect([await setting('bind'), await setting('save'), await setting('appendonly')]).toEqual([
        '127.0.0.1',
        '',
        'no',
      ]);
      const directory = await setting('dir');
      expect(directory.startsWith(join(tmpdir(), 'judge-redis-'))).toBe(true);
      return { app, url: url as string, pid: Number(pid), directory };
    } finally {
      redis.disconnect();
    }
  }

  /** What a failed assertion left running: the app, and the Redis a SIGKILLed app may not stop. */
  function cleanUp(app: RunningApp): void {
    app.child.kill('SIGKILL');
    const pid = Number(app.output().match(/\(pid (\d+); loopback only/)?.[1]);
    if (pid && !gone(pid)) process.kill(pid, 'SIGKILL');
  }

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'starts a throwaway Redis, serves with it, and stops it on %s after the final flush',
    async (signal) => {
      const env = await environment(signal);
      const { app, url, pid, directory } = await startWithThrowawayRedis(env);
      try {
        const like = await fetch(`http://127.0.0.1:${env.PORT}/solutions/1/like`, {
          method: 'POST',
          headers: { 'X-User-Id': '1' },
        });
        // The demo data gives solution 1 212 likes.
        expect(await like.json()).toEqual({ id: 1, userId: 1, liked: true, changed: true, like_count: 213 });

        app.child.kill(signal);
        // Nest's shutdown hooks close the app (the counter module's final flush first), then end the
        // process by the same signal; the throwaway Redis stops once the process is gone.
        expect(await app.exited).toEqual({ code: null, signal });
        expect(app.output()).toContain(`Online judge stopped on ${signal}`);
        await expect.poll(() => gone(pid), { timeout: 5000 }).toBe(true);
        expect(await answers(url)).toBe(false);
        await expect.poll(() => existsSync(directory), { timeout: 5000 }).toBe(false);

        // The final flush ran while the throwaway Redis still held the like.
        const database = new DataSource({
          type: 'better-sqlite3',
          database: env.DATABASE_URL.slice('sqlite://'.length),
        });
        await database.initialize();
        expect(await database.query('SELECT like_count FROM solutions WHERE id = 1')).toEqual([{ like_count: 213 }]);
        await database.destroy();
      } finally {
        cleanUp(app);
      }
    },
  );

  it('stops the throwaway Redis and removes its directory when the app is killed with SIGKILL', async () => {
    const { app, url, pid, directory } = await startWithThrowawayRedis(await environment('SIGKILL'));
    try {
      app.child.kill('SIGKILL');
      await app.exited;
      await expect.poll(() => gone(pid), { timeout: 5000 }).toBe(true);
      expect(await answers(url)).toBe(false);
      await expect.poll(() => existsSync(directory), { timeout: 5000 }).toBe(false);
    } finally {
      cleanUp(app);
    }
  });

  it('says in one line how to get a Redis when redis-server is not on the PATH', async () => {
    const env = await environment('no-redis-server');
    const app = startApp({ ...env, PATH: join(directory, 'empty') });
    expect(await app.exited).toEqual({ code: 1, signal: null });
    const lines = app.output().trim().split('\n');
    expect(lines).toEqual([
      `The online judge could not start: Cannot reach Redis at ${env.REDIS_URL} ` +
        `(connect ECONNREFUSED ${env.REDIS_URL.slice('redis://'.length)}). ` +
        'redis-server is not on the PATH either: install redis-server or set REDIS_URL.',
    ]);
  });
});
