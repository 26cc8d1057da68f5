import { defineConfig } from 'vitest/config';

// `npm run test:chaos`: the chaos scenarios (chaos/README.md). Each one starts real app instances as
// child processes and needs the machine to itself: one file at a time, in one forked process.
export default defineConfig({
  test: {
    include: ['chaos/**/*.chaos.ts'],
    globalSetup: ['chaos/compile-worker.global-setup.ts'],
    reporters: ['default', './test/support/summary-line.reporter.ts'],
    setupFiles: ['reflect-metadata'],
    testTimeout: 180_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
    maxWorkers: 1,
  },
  // The parent reads and writes rows through TypeORM entities: decorator metadata as in vitest.config.ts.
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
});
