import type { Reporter, TestCase, TestModule } from 'vitest/node';

/**
 * Ends the run with one plain line, `tests: N passed, N failed, N skipped`, that tools reading a
 * run's last lines understand whatever the test runner. Unhandled errors count as failures, and so do
 * the tests that never ran because a hook of their suite failed (a failed `beforeAll` leaves them
 * marked skipped, which would read as a pass).
 */
export default class SummaryLineReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    const counts = { passed: 0, failed: unhandledErrors.length, skipped: 0 };
    for (const module of testModules) {
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed' || inFailedSuite(test)) counts.failed++;
        else counts.skipped++;
      }
    }
    process.stdout.write(`\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  }
}

/** Whether a suite around the test (or its module) has errors of its own: a failed hook. */
function inFailedSuite(test: TestCase): boolean {
  for (
    let suite: TestCase['parent'] | undefined = test.parent;
    suite;
    suite = suite.type === 'suite' ? suite.parent : undefined
  ) {
    if (suite.errors().length > 0) return true;
  }
  return false;
}
