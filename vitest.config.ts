import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.spec.ts'],
    reporters: ['default', './test/summary-line.reporter.ts'],
    setupFiles: ['reflect-metadata'],
    // Starts the local Redis Cluster when the cluster topology is tested and it is not running.
    globalSetup: ['./test/support/redis-cluster.global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
  // The sample app imports the package by name (tsconfig.json maps it to lib/ for the type check).
  resolve: { alias: { 'nestjs-counter': fileURLToPath(new URL('./lib/index.ts', import.meta.url)) } },
  // Nest's dependency injection reads the decorator metadata TypeScript would emit; Vite's oxc
  // transformer emits it too (legacy decorators, as in tsconfig.json).
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
});
