import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { chunks } from '../collections.js';
import { COUNTER_OPTIONS } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterRegistry } from '../counter.registry.js';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import { FlushHistory } from '../flush/flush.history.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import { CounterKeys } from '../redis/counter.keys.js';
import { RepairStore, type RepairJob, type RepairProgress } from '../redis/repair.store.js';
import { ScriptRunner } from '../redis/script.runner.js';
import { CounterReconciler } from './counter.reconciler.js';
import { RefusedChanges } from './refused-changes.js';

/** Rows a repair recounts per step: what one step holds the lease for, and what a failed step repeats. */
const ROWS_PER_STEP = 1000;

/**
 * Why a walk waits `flushLeaseMs + databaseTimeoutMs` after the loss it repairs was noticed: a batch claimed
 * before the loss starts its transaction within one lease (a renewal then finds the lease gone and stops
 * it), and a flush waits at most `databaseTimeoutMs` for a transaction. By then each such transaction has
 * ended and its acknowledgement, finding its batch gone, has had its rows reload from the database (or the
 * flush gave up on it, and its late end does the same): the walk compares with the truth.
 */

/** First wait after a failed step or Redis call; it doubles with each failure, up to `flushMaxBackoffMs`. */
const FIRST_RETRY_MS = 200;

/** How often `idle` looks again. */
const IDLE_POLL_MS = 50;

/**
 * `repairOnDataLoss`: recounts, in the background, the counters that declare a source of the entities
 * whose Redis data was lost, once per loss whichever instances notice it. The walks live in Redis
 * (RepairStore): any instance with the option runs them, one at a time under a lease, step by step from
 * the saved cursor, retrying with backoff until they finish; another instance takes a walk over once the
 * lease of the one walking it runs out. Also recounts the rows whose changes were refused while Redis
 * could not be reached (RefusedChanges) once it is back.
 */
@Injectable()
export class DataLossRepairer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('CounterRepair');
  private readonly store: RepairStore;
  /** This instance's lease token. */
  private readonly token = randomUUID();
  /** Counters of losses noticed here, each list not yet queued in Redis. */
  private noticed: string[][] = [];
  /** The last call queueing them (see `queueNoticed`). */
  private queueing: Promise<void> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private turnRunning?: Promise<void>;
  private failures = 0;
  private stopping = false;

  constructor(
    private readonly history: FlushHistory,
    private readonly reconciler: CounterReconciler,
    private readonly registry: CounterRegistry,
    private readonly refused: RefusedChanges,
    runner: ScriptRunner,
    keys: CounterKeys,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {
    this.store = new RepairStore(runner, keys.repair);
  }

  onApplicationBootstrap(): void {
    if (!this.options.repairOnDataLoss) return;
    this.history.onRedisDataLoss((_, keysMadeOf) => this.lossNoticed(keysMadeOf));
    this.schedule(0);
  }

  /** Stops between two steps; the lease is given back, so another instance goes on at once. */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.options.repairOnDataLoss) return;
    this.stopping = true;
    clearTimeout(this.timer);
    await this.turnRunning;
    await this.store.release(this.token).catch(() => undefined);
  }

  /**
   * Resolves once no repair is queued in Redis (by any instance), none noticed here waits to be queued,
   * and no refused change waits here to be recounted (for tests and scripts).
   */
  get idle(): Promise<void> {
    return this.untilIdle();
  }

  /**
   * Queues the repair of a loss this instance saw happen (it made the lost generation keys again):
   * instances that notice the same loss by a generation going back leave it to that one, so that one
   * loss makes one walk.
   */
  private lossNoticed(keysMadeOf: CountedEntity[]): void {
    const counters = keysMadeOf.flatMap((entity) =>
      entity.counters.filter((field) => field.source).map((field) => jobName(entity, field)),
    );
    if (counters.length === 0) return;
    this.noticed.push(counters);
    // At once, not after a step under way: that walk must learn it is to start over before it records.
    this.queueNoticed().catch(() => undefined);
    if (!this.turnRunning) this.schedule(0);
  }

  /** Queues in Redis the losses noticed here, one call at a time; what fails waits for the next turn. */
  private queueNoticed(): Promise<void> {
    const queued = this.queueing.then(async () => {
      while (this.noticed.length > 0) {
        await this.store.enqueue(this.noticed[0], this.walkDelayMs, randomUUID());
        this.noticed.shift();
      }
    });
    this.queueing = queued.catch(() => undefined);
    return queued;
  }

  private schedule(ms: number): void {
    if (this.stopping) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.turnRunning = this.turn().finally(() => (this.turnRunning = undefined));
    }, ms);
  }

  /** One turn: a step of a walk, or a look for work; then the next turn, sooner after a failure. */
  private async turn(): Promise<void> {
    let next: number;
    try {
      next = await this.step();
      this.failures = 0;
    } catch (error) {
      if (error instanceof CounterStoreUnavailableError) this.refused.unreachable();
      const firstFailure = this.failures === 0;
      next = Math.min(FIRST_RETRY_MS * 2 ** this.failures++, this.options.flushMaxBackoffMs);
      if (error instanceof WalkStepError) {
        this.logger.warn(MESSAGES.repairRetrying(error.counter, error.checked, error.cause.message, next));
      } else if (firstFailure) {
        // Redis down with nothing to repair says so once: the flushes and the changes report the outage.
        this.logger.warn(MESSAGES.repairWaitFailed((error as Error).message, next));
      }
    }
    this.schedule(this.noticed.length > 0 ? 0 : next);
  }

  /** Queues what was noticed, then walks a step of a due repair, or recounts refused rows. Returns the wait. */
  private async step(): Promise<number> {
    await this.queueNoticed();
    const pollMs = this.options.flushLeaseMs;
    const turn = await this.store.take(this.token, this.options.flushLeaseMs);
    if (turn.kind === 'due') {
      const job = turn.jobs.find((each) => each.notBefore <= turn.now && this.counterOf(each));
      // Walks of counters this instance does not know (a newer deployment's) are left to one that does.
      if (!job) {
        await this.store.release(this.token);
        return pollMs;
      }
      await this.walkStep(job);
      return 0;
    }
    // While a walk waits for flushes in flight at a loss, a recount of refused rows would wait too.
    if (turn.kind === 'wait') return Math.min(turn.ms, pollMs);
    await this.recountRefused();
    return pollMs;
  }

  private get walkDelayMs(): number {
    return this.options.flushLeaseMs + this.options.databaseTimeoutMs;
  }

  /** Recounts the next rows of a walk and saves how far it went; the lease is renewed while it runs. */
  private async walkStep(job: RepairJob): Promise<void> {
    const { entity, field } = this.counterOf(job)!;
    let progress: RepairProgress = job.progress ?? { after: null, checked: 0, corrected: 0 };
    // A walk that starts says so first: a loss noticed from now on starts it over.
    if (!job.progress && !(await this.store.save(this.token, job, progress))) return;
    const renewal = setInterval(
      () => void this.store.renew(this.token, this.options.flushLeaseMs).catch(() => undefined),
      this.options.flushLeaseMs / 3,
    );
    try {
      const report = await this.reconciler.recount(entity, field, {
        after: progress.after ?? undefined,
        limit: ROWS_PER_STEP,
      });
      progress = {
        after: report.cursor,
        checked: progress.checked + report.checked,
        corrected: progress.corrected + report.corrected.length,
      };
    } catch (error) {
      throw new WalkStepError(`${entity.name}.${field.name}`, progress.checked, error as Error);
    } finally {
      clearInterval(renewal);
    }
    const done = progress.after === null;
    // Not saved: the lease ran out (another instance goes on from the saved cursor) or a newer loss
    // started the walk over.
    const saved = await this.store.save(this.token, job, done ? null : progress);
    if (saved && done) {
      this.logger.log(MESSAGES.repairDone(`${entity.name}.${field.name}`, progress.checked, progress.corrected));
    }
  }

  /** Recounts the rows whose changes were refused, or queues a whole walk of counters with too many. */
  private async recountRefused(): Promise<void> {
    const { rows, whole } = this.refused.due();
    for (const { entity, field } of whole) {
      await this.store.enqueue([jobName(entity, field)], this.walkDelayMs, randomUUID());
      this.refused.queuedWhole(field);
    }
    for (const { entity, field, ids } of rows) {
      for (const part of chunks(ids, ROWS_PER_STEP)) {
        const report = await this.reconciler.recount(entity, field, { ids: part });
        const skipped = new Set(report.skipped.map(String));
        this.refused.recounted(
          field,
          part.filter((id) => !skipped.has(String(id))),
        );
        const name = `${entity.name}.${field.name}`;
        this.logger.log(MESSAGES.refusedRowsRecounted(name, report.checked, report.corrected.length));
      }
    }
  }

  /** The entity and counter of a job, if this instance knows them and the counter has a source. */
  private counterOf(job: RepairJob): { entity: CountedEntity; field: CounterField } | undefined {
    for (const entity of this.registry.all()) {
      const field = entity.counters.find((each) => each.source && jobName(entity, each) === job.counter);
      if (field) return { entity, field };
    }
    return undefined;
  }

  private async untilIdle(): Promise<void> {
    if (!this.options.repairOnDataLoss) return;
    for (;;) {
      if (!this.turnRunning && this.noticed.length === 0 && this.refused.empty) {
        const jobs = await this.store.jobs().catch(() => undefined);
        if (jobs?.length === 0) return;
      }
      await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
    }
  }
}

function jobName(entity: CountedEntity, field: CounterField): string {
  return RepairStore.counterOf(entity.key, field.name);
}

/** A failed step of a walk: which walk, how far it had come. */
class WalkStepError extends Error {
  constructor(
    readonly counter: string,
    readonly checked: number,
    override readonly cause: Error,
  ) {
    super(cause.message);
  }
}
