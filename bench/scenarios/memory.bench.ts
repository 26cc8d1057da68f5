import type { BenchScenario } from '../harness/bench-context.js';

// PLACEHOLDER: being written.
export const memoryPerRow: BenchScenario = {
  id: 5,
  slug: 'memory',
  title: 'memory',
  run: async () => {
    throw new Error('not written yet');
  },
};
