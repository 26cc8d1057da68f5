import { defineConfig } from 'vitest/config';

// `npm run test:packaging`: the fixture apps under test/packaging install the packed tarball (npm pack)
// with npm, as a user's app would, build it with its own TypeScript and run it against PostgreSQL; one of
// them is made from the README's quick start, as written.
export default defineConfig({
  test: {
    include: ['test/packaging/**/*.spec.ts'],
    reporters: ['default', './test/support/summary-line.reporter.ts'],
    testTimeout: 120_000,
    // Installing an app's dependencies from the registry takes a minute or two.
    hookTimeout: 600_000,
    pool: 'forks',
    fileParallelism: false,
    maxWorkers: 1,
  },
});
