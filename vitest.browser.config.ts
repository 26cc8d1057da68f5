import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:browser`: the sample app's page in headless Chromium. Apart from `npm test`, so that it
// slows no other suite and CI runs it as a stage of its own (after scripts/ensure-chromium.sh).
export default defineConfig({
  test: {
    include: ['test/browser/**/*.spec.ts'],
    reporters: ['default', './test/support/summary-line.reporter.ts'],
    setupFiles: ['reflect-metadata'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
  },
  // The app runs in the test's process, from source: resolved and transformed as in vitest.config.ts.
  resolve: { alias: { 'nestjs-counter': fileURLToPath(new URL('./lib/index.ts', import.meta.url)) } },
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
});
