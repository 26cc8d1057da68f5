import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { CounterService, type FlushReport } from 'nestjs-counter';
import { FlushLog } from './flush.log.js';
import { SqlStatementCounter } from './sql-statement.counter.js';

/** Time between two scheduled flushes: the library's default. */
export const FLUSH_INTERVAL_MS = 1_000;

/** Longest wait after failed flushes in a row (the wait doubles with each). */
const MAX_BACKOFF_MS = 30_000;

/**
 * The app's scheduled flush: `CounterService.flush()` every second (the module's own timer is off, see
 * counterOptions), which the page can pause, resume and run at once, and whose reports it logs. One
 * flush at a time; after a failure the next waits longer, and the timer never stops.
 */
@Injectable()
export class FlushLoop implements BeforeApplicationShutdown {
  private readonly logger = new Logger('FlushLoop');
  private paused = false;
  private stopping = false;
  private running?: Promise<FlushReport>;
  private failures = 0;
  private nextAttemptAt = 0;

  constructor(
    private readonly counters: CounterService,
    private readonly log: FlushLog,
    private readonly statements: SqlStatementCounter,
  ) {}

  get isPaused(): boolean {
    return this.paused;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.nextAttemptAt = 0;
  }

  /** Runs a flush now, paused or not, after the one running (if any) ends. */
  async flushNow(): Promise<FlushReport> {
    await this.running?.catch(() => undefined);
    return this.running ?? this.run();
  }

  @Interval(FLUSH_INTERVAL_MS)
  tick(): void {
    if (this.paused || this.stopping || this.running || Date.now() < this.nextAttemptAt) return;
    this.run().catch((error: Error) => this.logger.error(`The flush threw: ${error.message}`, error.stack));
  }

  /** Lets a flush that runs end before the module's final flush. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.running?.catch(() => undefined);
  }

  private run(): Promise<FlushReport> {
    const before = this.statements.read().statements;
    this.running = this.counters
      .flush()
      .then((report) => {
        this.log.record(report, this.statements.read().statements - before);
        this.scheduleAfter(report);
        return report;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private scheduleAfter(report: FlushReport): void {
    if (!report.error) {
      this.failures = 0;
      this.nextAttemptAt = 0;
      return;
    }
    this.failures++;
    const delay = Math.min(MAX_BACKOFF_MS, FLUSH_INTERVAL_MS * 2 ** this.failures);
    this.nextAttemptAt = Date.now() + delay;
    this.logger.warn(`Flush failed (${this.failures} in a row), next in ${delay} ms: ${report.error.message}`);
  }
}
