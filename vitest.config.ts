import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm test` runs both projects; `npm run test:unit` only the one that needs no server.
export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-line.reporter.ts'],
    setupFiles: ['reflect-metadata'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.spec.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.spec.ts'],
          // Starts the local Redis Cluster when the cluster topology is tested and it is not running.
          globalSetup: ['./test/support/redis-cluster.global-setup.ts'],
        },
      },
    ],
  },
  // The sample app imports the package by name (tsconfig.json maps it to lib/ for the type check).
  resolve: { alias: { 'nestjs-counter': fileURLToPath(new URL('./lib/index.ts', import.meta.url)) } },
  // Nest's dependency injection reads the decorator metadata TypeScript would emit; Vite's oxc
  // transformer emits it too (legacy decorators, as in tsconfig.json).
  oxc: { decorator: { legacy: true, emitDecoratorMetadata: true } },
});
