import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { randomUUID } from 'node:crypto';
import { COUNTER_FLUSH_JOB_PREFIX, COUNTER_OPTIONS } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterConfigurationError } from '../exceptions/counter-configuration.error.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';
import { CounterStatusReader } from '../counter-status.reader.js';
import { CounterFlusher } from './counter.flusher.js';
import { addCronJob } from '../peer-compat.js';
import { loadCronJob } from './cron-job.loader.js';
import { FlushHistory } from './flush.history.js';
import { dependencyOf, OutageLog } from './outage.log.js';

/**
 * Runs the flush every `flushIntervalMs`, or on the `flushCron` expression, through `SchedulerRegistry`.
 * A tick that comes while a flush runs starts the next one as soon as it ends. A failed flush never stops
 * the timer: it is retried after an exponential backoff with jitter, and logged (see OutageLog). On shutdown
 * the timer stops and one last flush runs before the connections close.
 */
@Injectable()
export class CounterFlushScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('CounterFlush');
  /** Unique per module instance, so several apps (or modules) in one process never collide. */
  readonly jobName = `${COUNTER_FLUSH_JOB_PREFIX}:${randomUUID()}`;
  private running?: Promise<void>;
  /** A tick came while a flush ran. */
  private tickMissed = false;
  private stopping = false;
  private nextAttemptAt = 0;

  constructor(
    private readonly flusher: CounterFlusher,
    private readonly history: FlushHistory,
    private readonly statusReader: CounterStatusReader,
    private readonly outages: OutageLog,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
    @Optional() private readonly schedulerRegistry?: SchedulerRegistry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.options.flushEnabled) return;
    if (!this.schedulerRegistry) throw new CounterConfigurationError(MESSAGES.schedulerMissing());
    if (this.options.flushCron === undefined) {
      this.schedulerRegistry.addInterval(
        this.jobName,
        setInterval(() => this.tick(), this.options.flushIntervalMs),
      );
    } else {
      await this.mountCron(this.schedulerRegistry, this.options.flushCron);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.schedulerRegistry?.doesExist('interval', this.jobName)) {
      this.schedulerRegistry.deleteInterval(this.jobName);
    }
    if (this.schedulerRegistry?.doesExist('cron', this.jobName)) {
      this.schedulerRegistry.deleteCronJob(this.jobName);
    }
    await this.running;
    if (!this.options.flushOnShutdown) return;
    try {
      await this.warnOfWorkLeft(await this.flusher.flush());
    } catch (error) {
      this.logger.error(`${MESSAGES.finalFlushFailed()} ${(error as Error).message}`);
    }
  }

  /**
   * Says what a final flush left in Redis and why: no instance may be left running to flush it soon. With
   * Redis unreachable nobody can count it, so this instance says what it knows of its own changes.
   */
  private async warnOfWorkLeft({ busyShards, lostLeases, failedShards, error }: FlushReport): Promise<void> {
    if (error && dependencyOf(error) === 'Redis') return this.outages.finalFlushCouldNotRun();
    if (error) this.logger.error(`${MESSAGES.finalFlushFailed()} ${error.message}`);
    if (busyShards + lostLeases + failedShards === 0 && !error) return;
    const { pendingRows: rows } = await this.statusReader.status();
    this.logger.warn(
      MESSAGES.finalFlushLeftWork({
        busy: busyShards,
        lost: lostLeases,
        failed: failedShards,
        reason: error?.message,
        rows,
      }),
    );
  }

  /**
   * One scheduled run; none while a backoff is in force. A tick that comes while the previous run goes
   * on starts the next run when it ends, not at the tick after: a change made just after a flush passed
   * its shard then waits for the next flush, and not for the rest of an interval as well (G3: the
   * database trails by at most an interval plus a flush; a flush that outlasts the interval is followed
   * by the next one at once).
   */
  tick(): void {
    if (this.stopping) return;
    if (this.running) {
      this.tickMissed = true;
      return;
    }
    if (Date.now() < this.nextAttemptAt) return;
    this.running = this.flusher
      .flush()
      .then((report) => {
        if (report.error) this.backOff(report.error);
        else this.nextAttemptAt = 0;
      })
      .catch((error: Error) => {
        // The flush itself threw (a bug, not a failed shard): it could not record that it failed.
        this.history.flushFailed(error);
        this.backOff(error);
      })
      .finally(() => {
        this.running = undefined;
        if (this.tickMissed) {
          this.tickMissed = false;
          this.tick();
        }
      });
  }

  private async mountCron(registry: SchedulerRegistry, expression: string): Promise<void> {
    const CronJob = await loadCronJob();
    let job: InstanceType<typeof CronJob<null, null>>;
    try {
      job = new CronJob<null, null>(expression, () => this.tick());
    } catch (error) {
      throw new CounterConfigurationError(MESSAGES.badCron(expression, (error as Error).message), { cause: error });
    }
    addCronJob(registry, this.jobName, job);
    job.start();
  }

  /** Waits longer after each failed flush in a row (the flusher counts them), with jitter. */
  private backOff(error: Error): void {
    const failures = this.history.consecutiveFailedFlushes;
    const ceiling = Math.min(this.options.flushMaxBackoffMs, this.options.flushIntervalMs * 2 ** failures);
    const delay = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
    this.nextAttemptAt = Date.now() + delay;
    this.outages.flushFailed(error, failures, delay);
  }
}
