// Global setup of `npm run test:chaos`: compiles the worker (with lib/ and the test entities) to
// chaos/dist once, since the child processes run plain JavaScript, and empties the results file.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { resetResults } from './harness/chaos-results.js';

const require = createRequire(import.meta.url);

export default function setup(): void {
  const tsconfig = fileURLToPath(new URL('./tsconfig.json', import.meta.url));
  rmSync(fileURLToPath(new URL('./dist', import.meta.url)), { recursive: true, force: true });
  const tsc = require.resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', tsconfig], { stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`compiling the chaos worker failed:\n${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}`, {
      cause: error,
    });
  }
  resetResults();
}
