import type { BenchScenario } from '../harness/bench-context.js';

// PLACEHOLDER: being written.
export const flushThroughput: BenchScenario = {
  id: 3,
  slug: 'flush-throughput',
  title: 'flush-throughput',
  run: async () => {
    throw new Error('not written yet');
  },
};
