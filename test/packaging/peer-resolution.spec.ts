import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npm, packTarball, removeDirectory } from './fixture-app.js';

const NEST_12 = ['@nestjs/common@12', '@nestjs/core@12', '@nestjs/schedule@12', '@nestjs/typeorm@12', 'typeorm@1'];
const NEST_11 = ['@nestjs/common@11', '@nestjs/core@11', '@nestjs/schedule@6', '@nestjs/typeorm@11', 'typeorm@0.3'];

let workspace: string;
let tarball: string;

beforeAll(async () => {
  workspace = mkdtempSync(join(tmpdir(), 'nestjs-counter-peers-'));
  tarball = await packTarball(workspace);
});
afterAll(() => removeDirectory(workspace));

/**
 * What npm resolves when a user adds the package to an app (`npm install` without downloading: the
 * lockfile it would write). TypeORM declares an optional peer `ioredis ^5` in 0.3 and 1.x alike.
 */
describe('npm install nestjs-counter into a new app', () => {
  it('takes ioredis 5 with TypeORM 1 when the app names no ioredis', async () => {
    const lock = await resolve('typeorm1-any-ioredis', [...NEST_12, tarball]);
    expect(lock.version('ioredis')).toMatch(/^5\./);
    expect(lock.version('typeorm')).toMatch(/^1\./);
  });

  it('installs on Nest 11 with TypeORM 0.3 and ioredis 5', async () => {
    const lock = await resolve('nest11', [...NEST_11, 'ioredis@5', tarball]);
    expect(lock.version('@nestjs/core')).toMatch(/^11\./);
    expect(lock.version('typeorm')).toMatch(/^0\.3\./);
    expect(lock.version('ioredis')).toMatch(/^5\./);
  });

  it('takes ioredis 6 with TypeORM 1 given the override the README documents', async () => {
    const overrides = { typeorm: { ioredis: '$ioredis' } };
    const lock = await resolve('typeorm1-ioredis6', [...NEST_12, 'ioredis@6', tarball], overrides);
    expect(lock.version('ioredis')).toMatch(/^6\./);
  });

  it("without the override, stops at TypeORM's own optional peer (not ours)", async () => {
    const failure = await resolve('typeorm1-ioredis6-bare', [...NEST_12, 'ioredis@6', tarball]).catch(
      (error: Error & { stderr?: string }) => error.stderr ?? error.message,
    );
    expect(failure).toEqual(expect.stringContaining('ERESOLVE'));
    expect(failure).toEqual(expect.stringContaining('peerOptional ioredis@"^5.0.4" from typeorm@1'));
    expect(failure).not.toEqual(expect.stringContaining('from nestjs-counter'));
  });
});

interface Lock {
  version(name: string): string;
}

async function resolve(name: string, packages: string[], overrides?: object): Promise<Lock> {
  const app = join(workspace, name);
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name, private: true, overrides }, null, 2));
  await npm(app, ['install', '--package-lock-only', ...packages]);
  const { packages: placed } = JSON.parse(readFileSync(join(app, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version: string }>;
  };
  return { version: (pkg) => placed[`node_modules/${pkg}`].version };
}
