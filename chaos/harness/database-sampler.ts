// Reads the targets' database values every few milliseconds while a scenario runs, to catch a value
// that goes backwards (the database only ever receives deltas, and the load only adds: any decrease is
// a bug, even one that a later write hides).
import type { DataSource } from 'typeorm';
import { readTargets, type CounterTarget } from './counter-targets.js';

export interface BackwardStep {
  target: string;
  from: number;
  to: number;
}

export class DatabaseSampler {
  samples = 0;
  /** Samples that could not be read (the observer's own connection failed): counted, not fatal. */
  failedSamples = 0;
  readonly backwards: BackwardStep[] = [];
  private readonly last = new Map<string, number>();
  private running = false;
  private loop?: Promise<void>;

  constructor(
    private readonly dataSource: DataSource,
    private readonly targets: CounterTarget[],
    private readonly intervalMs = 100,
  ) {}

  start(): this {
    this.running = true;
    this.loop = this.run();
    return this;
  }

  /** Stops sampling after one last sample. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await this.sample();
  }

  private async run(): Promise<void> {
    while (this.running) {
      await this.sample().catch(() => this.failedSamples++);
      await new Promise((resolve) => setTimeout(resolve, this.intervalMs));
    }
  }

  private async sample(): Promise<void> {
    const values = await readTargets(this.dataSource, this.targets);
    this.samples++;
    for (const [target, value] of values) {
      const previous = this.last.get(target);
      if (previous !== undefined && value < previous) this.backwards.push({ target, from: previous, to: value });
      this.last.set(target, value);
    }
  }
}
