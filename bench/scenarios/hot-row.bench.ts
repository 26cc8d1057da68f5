import type { BenchScenario } from '../harness/bench-context.js';

// PLACEHOLDER: being written.
export const hotRow: BenchScenario = {
  id: 2,
  slug: 'hot-row',
  title: 'hot-row',
  run: async () => {
    throw new Error('not written yet');
  },
};
