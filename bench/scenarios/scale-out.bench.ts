import { cpus } from 'node:os';
import type { BenchScenario } from '../harness/bench-context.js';
import type { BenchRow } from '../harness/bench-results.js';
import { measureIncrements } from './increment-path.bench.js';

const CONCURRENCY = 200;

export const scaleOut: BenchScenario = {
  id: 6,
  slug: 'scale-out',
  title: 'Scale-out: 3-master cluster vs single Redis',
  async run(context) {
    const [single] = await measureIncrements(context, 'standalone', [CONCURRENCY]);
    const [cluster] = await measureIncrements(context, 'cluster', [CONCURRENCY]);
    const rows: BenchRow[] = [
      {
        label: `CounterService.increment, concurrency ${CONCURRENCY}`,
        library: cluster.library,
        baseline: single.library,
      },
      { label: `raw INCR, concurrency ${CONCURRENCY}`, library: cluster.baseline!, baseline: single.baseline },
    ];
    return {
      library: `the same load (increments of 10,000 seeded rows from one Node process) against the local Redis Cluster of three masters, each with a replica.`,
      baseline: 'the same load against the single Redis server.',
      unit: 'increments',
      rows,
      checks: [],
      notes: [
        'The issue sets no target for this scenario; it shows what a cluster costs or gives one application process.',
        `All of it runs on one machine with ${cpus().length} cores: the load generator, three masters and three replicas share them, so this measures the client-side cost of routing by slot, not added capacity. On separate hosts each master adds a core's worth of script execution (see docs/SCALE.md).`,
      ],
    };
  },
};
