import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../support/free-port.js';
import { MarkdownSection, type DocSourceFile } from './markdown-code.js';
import { npm } from './fixture-app.js';

const run = promisify(execFile);
const REPOSITORY = join(import.meta.dirname, '..', '..');
const SKELETON = join(import.meta.dirname, 'quick-start-app');

/** What `nest new` (Nest 12) installs before the user follows the README. */
const NEST_NEW_PACKAGES = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/platform-express',
  'reflect-metadata',
  'rxjs',
  'typescript',
  '@types/node',
];

/** The files the README's quick start shows, in its order. */
export const QUICK_START_FILES = [
  'src/solution.entity.ts',
  'src/solutions.controller.ts',
  'src/app.module.ts',
  'src/main.ts',
];
/** The files docs/OPERATING.md's "Health" shows. */
export const HEALTH_FILES = ['src/health.controller.ts', 'src/health.module.ts'];

/** The docs' code, read once: the README's install commands and quick start, the health section's. */
export class QuickStartDocs {
  readonly install = MarkdownSection.read('README.md', 'Install');
  readonly quickStart = MarkdownSection.read('README.md', 'Quick start');
  readonly health = MarkdownSection.read('docs/OPERATING.md', 'Health');
}

/**
 * Makes the app a user makes by following the docs: a `nest new` skeleton, the README's install commands
 * (the package at `tarball`, every other one at the version this repository's lock resolves, from npm's
 * cache where it holds them), the quick start's files, then the health section's, its module added to
 * `AppModule`'s imports as the section says. Returns the app's directory.
 */
export async function makeQuickStartApp(docs: QuickStartDocs, tarball: string): Promise<string> {
  const app = mkdtempSync(join(tmpdir(), 'nestjs-counter-quick-start-'));
  cpSync(SKELETON, app, { recursive: true });
  await install(app, NEST_NEW_PACKAGES, tarball);
  for (const command of [...docs.install.commands(), ...docs.health.commands()]) {
    await runDocCommand(app, command, tarball);
  }
  const files = [...docs.quickStart.sourceFiles(), ...docs.health.sourceFiles()];
  const shown = files.map((file) => file.path).join(', ');
  const expected = [...QUICK_START_FILES, ...HEALTH_FILES].join(', ');
  if (shown !== expected) throw new Error(`the docs show ${shown}; the test expects ${expected}`);
  for (const file of files) write(app, file.path === 'src/app.module.ts' ? withHealthModule(file) : file);
  return app;
}

/** Builds the app with its own TypeScript; rejects with the compiler's messages. */
export async function buildApp(app: string): Promise<void> {
  await run('npm', ['run', 'build'], { cwd: app }).catch((error: Error & { stdout?: string }) => {
    throw new Error(`the quick start does not compile:\n${error.stdout ?? ''}${error.message}`);
  });
}

export interface StartedApp {
  url: string;
  output(): string;
  /** Sends SIGTERM and resolves once the process has exited. */
  stop(): Promise<void>;
}

/** Starts `node dist/main.js` and resolves once it answers HTTP. */
export async function startBuiltApp(app: string, env: Record<string, string>): Promise<StartedApp> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: app,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 30_000;
  while (!(await answers(url))) {
    if (child.exitCode !== null) throw new Error(`the app exited with code ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      await stop(child, exited);
      throw new Error(`the app did not answer within 30 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { url, output: () => output, stop: () => stop(child, exited) };
}

async function answers(url: string): Promise<boolean> {
  return fetch(url).then(
    () => true,
    () => false,
  );
}

function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  return exited;
}

/** Runs a command a doc tells the user to run; `npm install` takes the versions described above. */
async function runDocCommand(app: string, command: string, tarball: string): Promise<void> {
  const installing = /^npm (?:install|i) (.+)$/.exec(command);
  if (installing) return install(app, installing[1].split(/\s+/), tarball);
  if (/^npm pkg set /.test(command)) {
    await run('sh', ['-c', command], { cwd: app });
    return;
  }
  throw new Error(`the docs tell the user to run a command this test does not know: ${command}`);
}

async function install(app: string, packages: string[], tarball: string): Promise<void> {
  const specs = packages.map((name) => (name === 'nestjs-counter' ? tarball : `${name}@${lockedVersion(name)}`));
  await npm(app, ['install', '--prefer-offline', ...specs]);
}

function lockedVersion(name: string): string {
  const lock = JSON.parse(readFileSync(join(REPOSITORY, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string } | undefined>;
  };
  const version = lock.packages[`node_modules/${name}`]?.version;
  if (!version) throw new Error(`package-lock.json resolves no version of ${name}, which the docs install`);
  return version;
}

/** Adds `HealthModule` to `AppModule`'s imports, as docs/OPERATING.md's "Health" tells the user to. */
function withHealthModule(file: DocSourceFile): DocSourceFile {
  const imports = '  imports: [\n';
  if (file.text.split(imports).length !== 2) throw new Error(`${file.path} has no single "${imports.trim()}" list`);
  const text = file.text.replace(imports, `${imports}    HealthModule,\n`);
  return { path: file.path, text: `import { HealthModule } from './health.module.js';\n${text}` };
}

function write(app: string, file: DocSourceFile): void {
  mkdirSync(dirname(join(app, file.path)), { recursive: true });
  writeFileSync(join(app, file.path), file.text);
}
