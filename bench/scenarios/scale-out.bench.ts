import type { BenchScenario } from '../harness/bench-context.js';

// PLACEHOLDER: being written.
export const scaleOut: BenchScenario = {
  id: 6,
  slug: 'scale-out',
  title: 'scale-out',
  run: async () => {
    throw new Error('not written yet');
  },
};
