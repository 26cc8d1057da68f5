import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../support/free-port.js';

const run = promisify(execFile);
const REPOSITORY = join(import.meta.dirname, '..', '..');
const FIXTURES = import.meta.dirname;

/** Packs the repository as `npm publish` would (prepack builds it); returns the tarball's path. */
export async function packTarball(directory: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', directory], {
    cwd: REPOSITORY,
    maxBuffer: 16 * 1024 * 1024,
  });
  const [{ filename }] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ filename: string }>;
  return join(directory, filename);
}

/** Runs npm in `cwd`; resolves with its output, or rejects with it. */
export async function npm(cwd: string, args: string[]): Promise<string> {
  const { stdout, stderr } = await run('npm', [...args, '--no-audit', '--no-fund'], {
    cwd,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout + stderr;
}

/** A fixture app copied to a directory of its own, with the shared sources in src/. */
export function copyFixture(name: 'cjs-app' | 'esm-app'): string {
  const directory = mkdtempSync(join(tmpdir(), `nestjs-counter-${name}-`));
  cpSync(join(FIXTURES, name), directory, { recursive: true });
  cpSync(join(FIXTURES, 'app', 'src'), join(directory, 'src'), { recursive: true });
  return directory;
}

/** The version of a package installed in an app, as npm placed it. */
export function installedVersion(app: string, name: string): string {
  const manifest = JSON.parse(readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

export interface RunningApp {
  url: string;
  stop(): Promise<void>;
}

/** Starts the built app (`node dist/main.js`) and waits for its "listening" line. */
export async function startApp(app: string, env: Record<string, string>): Promise<RunningApp> {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: app,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the app did not start within 30 s:\n${output}`)), 30_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the app exited with code ${code}:\n${output}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => stop(child) };
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export function removeDirectory(directory: string): void {
  rmSync(directory, { recursive: true, force: true });
}
