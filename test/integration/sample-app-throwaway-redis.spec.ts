import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../support/free-port.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** `npm start`'s build (sample-app/dev/build.sh): the library, the app and its launcher; what it printed. */
function buildSampleApp(): string {
  try {
    return execFileSync(join(root, 'sample-app/dev/build.sh'), { cwd: root, stdio: 'pipe', encoding: 'utf8' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`npm start's build failed:\n${stdout ?? ''}${stderr ?? ''}`, { cause: error });
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

/** The lines `npm start` prints once the app serves (after the launcher's first line). */
async function summary(app: RunningApp): Promise<string[]> {
  await waitFor(app, /\n {2}stop {8}.*\n/);
  const lines = app.output().split('\n');
  expect(lines[0]).toBe('npm start: starting the online judge…');
  const first = lines.findIndex((line) => line.startsWith('npm start: the online judge serves'));
  return lines.slice(first, first + 5);
}

/** The SQLite file of `sqlite://<file>`, or the app's default: sample-app/data/judge.sqlite. */
const sqliteFile = (env: Record<string, string>) =>
  env.DATABASE_URL?.slice('sqlite://'.length) ?? join(root, 'sample-app/data/judge.sqlite');

/** The sample app's default prefix: judge:sqlite: and 8 hex digits of the SQLite file's SHA-256. */
const defaultPrefix = (env: Record<string, string>) =>
  `judge:sqlite:${createHash('sha256').update(sqliteFile(env)).digest('hex').slice(0, 8)}`;

// The README's first command: `npm start` builds saying one line per step, and once the app serves says
// which Redis, database and key prefix it uses and how to stop it. On a machine where Redis is installed
// but not running it starts a private, loopback-only, throwaway Redis, says so in one line, and stops it
// when the app exits, after the final flush; without redis-server it says in one line how to get a Redis.
describe('the sample app as npm start runs it', () => {
  let directory: string;
  let built: string;

  beforeAll(() => {
    built = buildSampleApp();
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

  /** Starts the app and waits until it serves, checking what it says and the throwaway Redis it reports. */
  async function startWithThrowawayRedis(env: Record<string, string>) {
    const app = startApp(env);
    try {
      return { app, ...(await checkThrowawayRedis(app, env)) };
    } catch (error) {
      cleanUp(app); // a failed check leaves neither the app nor its Redis running
      throw error;
    }
  }

  async function checkThrowawayRedis(app: RunningApp, env: Record<string, string>) {
    const [, url, pid] = await waitFor(
      app,
      /started a throwaway Redis at (redis:\/\/127\.0\.0\.1:\d+) \(pid (\d+); loopback only, no persistence/,
    );
    await waitFor(app, /Online judge listening/);
    expect(app.output()).toContain(`Nothing answers at ${env.REDIS_URL}`);
    expect(await summary(app)).toEqual([
      `npm start: the online judge serves http://localhost:${env.PORT}`,
      `  Redis       ${url} (throwaway: started for this run, no persistence, stopped with the app)`,
      `  database    SQLite file ${sqliteFile(env)} (DATABASE_URL picks another)`,
      `  key prefix  ${defaultPrefix(env)} (one per database; COUNTER_KEY_PREFIX overrides it)`,
      '  stop        Ctrl-C: the changes still in Redis are flushed to the database first',
    ]);
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
      return { url: url as string, pid: Number(pid), directory };
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
        // Every key the app wrote is under the prefix it printed.
        const redis = new Redis(url, RESP2);
        const keys = await redis.keys('*').finally(() => redis.disconnect());
        expect(keys.length).toBeGreaterThan(0);
        expect(keys.filter((key) => !key.startsWith(`${defaultPrefix(env)}:`))).toEqual([]);

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

  it('names the SQLite file it uses by default, sample-app/data/judge.sqlite, and its prefix', async () => {
    const { DATABASE_URL: _, ...env } = await environment('default');
    const { app } = await startWithThrowawayRedis(env);
    try {
      app.child.kill('SIGTERM');
      expect(await app.exited).toEqual({ code: null, signal: 'SIGTERM' });
    } finally {
      cleanUp(app);
    }
  });

  it('builds with one line per step and nothing else', () => {
    expect(built).toBe('npm start: building the library (tsc)…\nnpm start: building the sample app (tsc)…\n');
  });

  it('says it uses a shared Redis when one answers at REDIS_URL, and the prefix given', async () => {
    const shared = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
    const prefix = uniquePrefix('sample-start');
    const env = { ...(await environment('shared')), REDIS_URL: shared, COUNTER_KEY_PREFIX: prefix };
    const app = startApp(env);
    const redis = new Redis(shared, RESP2);
    try {
      expect(await summary(app)).toEqual([
        `npm start: the online judge serves http://localhost:${env.PORT}`,
        `  Redis       ${shared} (shared: the one at REDIS_URL, or 127.0.0.1:6379 when unset)`,
        `  database    SQLite file ${sqliteFile(env)} (DATABASE_URL picks another)`,
        `  key prefix  ${prefix} (one per database; COUNTER_KEY_PREFIX overrides it)`,
        '  stop        Ctrl-C: the changes still in Redis are flushed to the database first',
      ]);
      expect(app.output()).not.toContain('throwaway');
      app.child.kill('SIGINT');
      expect(await app.exited).toEqual({ code: null, signal: 'SIGINT' });
    } finally {
      app.child.kill('SIGKILL');
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });

  it('says in one line how to get a Redis when redis-server is not on the PATH', async () => {
    const env = await environment('no-redis-server');
    const app = startApp({ ...env, PATH: join(directory, 'empty') });
    expect(await app.exited).toEqual({ code: 1, signal: null });
    const lines = app.output().trim().split('\n');
    expect(lines).toEqual([
      'npm start: starting the online judge…',
      `The online judge could not start: Cannot reach Redis at ${env.REDIS_URL} ` +
        `(connect ECONNREFUSED ${env.REDIS_URL.slice('redis://'.length)}). ` +
        'redis-server is not on the PATH either: install redis-server or set REDIS_URL.',
    ]);
  });
});
