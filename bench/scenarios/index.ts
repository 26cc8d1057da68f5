import type { BenchScenario } from '../harness/bench-context.js';
import { durability } from './durability.bench.js';
import { flushThroughput } from './flush-throughput.bench.js';
import { hotRow } from './hot-row.bench.js';
import { incrementPath } from './increment-path.bench.js';
import { liveReads } from './live-reads.bench.js';
import { memoryPerRow } from './memory.bench.js';
import { recountRate } from './recount.bench.js';
import { scaleOut } from './scale-out.bench.js';
import { windows } from './windows.bench.js';

/** The scenarios of `npm run bench`, in the order they run. */
export const SCENARIOS: BenchScenario[] = [
  incrementPath,
  hotRow,
  flushThroughput,
  liveReads,
  memoryPerRow,
  scaleOut,
  recountRate,
  durability,
  windows,
];
