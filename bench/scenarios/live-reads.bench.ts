import type { BenchScenario } from '../harness/bench-context.js';

// PLACEHOLDER: being written.
export const liveReads: BenchScenario = {
  id: 4,
  slug: 'live-reads',
  title: 'live-reads',
  run: async () => {
    throw new Error('not written yet');
  },
};
