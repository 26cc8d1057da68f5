import type { ScenarioResult } from './bench-results.js';

export interface BenchContext {
  /** A short run (`--quick`): fewer rows and seconds, for checking that the benchmarks work. */
  quick: boolean;
  /** Measured seconds of one closed-loop point, in ms. */
  durationMs: number;
  /** Unmeasured warm-up before it, in ms. */
  warmupMs: number;
  log(line: string): void;
}

export interface BenchScenario {
  id: number;
  /** Used in `--only`, e.g. `npm run bench -- --only increment-path`. */
  slug: string;
  title: string;
  run(context: BenchContext): Promise<Omit<ScenarioResult, 'id' | 'title' | 'durationMs'>>;
}
