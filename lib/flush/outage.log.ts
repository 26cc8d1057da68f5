import { Injectable, Logger } from '@nestjs/common';
import { MESSAGES, type Dependency } from '../counter.messages.js';
import { failureReasonOf, type CounterFailureReason } from '../exceptions/counter-failure-reason.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';

/** An outage this instance met and has not seen end. */
interface Outage {
  failedFlushes: number;
  refusedChanges: number;
}

/** The changes this instance had made when a flush began: those it made since may wait in Redis. */
export interface ChangesMark {
  accepted: number;
  uncertain: number;
}

/** Which outage `error` is, if it is one the error table knows; undefined for anything else. */
export function dependencyOf(error: Error): Dependency | undefined {
  return DEPENDENCY_OF_REASON[failureReasonOf(error)];
}

/** The failures that are outages: a dependency not answering (in time), not a bug or a bad row. */
const DEPENDENCY_OF_REASON: Partial<Record<CounterFailureReason, Dependency>> = {
  'redis-unavailable': 'Redis',
  'database-unavailable': 'database',
  'replication-lag': 'claim confirmations',
};

/**
 * Logs an outage of Redis or the database as two changes of state, not as a failure per flush: one line
 * when this instance first meets it (a failed scheduled flush, or for Redis a refused change), with its
 * reason, and one when a flush or a change goes through again. The failed flushes between are debug
 * lines; an error no outage explains keeps its stack on each. It also counts the changes made since the
 * last flush that went well, for the shutdown's word on what may be left in Redis.
 */
@Injectable()
export class OutageLog {
  private readonly logger = new Logger('CounterFlush');
  private readonly outages = new Map<Dependency, Outage>();
  /** Changes Redis applied for this instance (increments, decrements, sets, recount corrections). */
  private accepted = 0;
  /** Changes sent to Redis that got no answer: they may have been applied. */
  private uncertain = 0;
  /** The mark of the last flush that went well; none yet: every change so far counts. */
  private flushed: ChangesMark | null = null;

  /** A change Redis answered; `applied`: it changed a counter (not a retry already applied). */
  changeAnswered(applied: boolean): void {
    if (applied) this.accepted++;
    if (this.outages.size > 0) this.ended('Redis');
  }

  changeFailed(error: unknown): void {
    if (!(error instanceof CounterStoreUnavailableError)) return;
    if (error.outcomeUnknown) this.uncertain++;
    this.began('Redis', error).refusedChanges++;
  }

  flushStarting(): ChangesMark {
    return { accepted: this.accepted, uncertain: this.uncertain };
  }

  /** A flush ended: one without an error ends every outage, and what was made before it began is flushed. */
  flushEnded(report: FlushReport, mark: ChangesMark): void {
    if (report.error) return;
    this.flushed = mark;
    for (const dependency of [...this.outages.keys()]) this.ended(dependency);
  }

  /** A scheduled flush failed, and the next is tried in `retryInMs`. */
  flushFailed(error: Error, attempt: number, retryInMs: number): void {
    const line = `${MESSAGES.flushFailed(attempt, retryInMs)} ${error.message}`;
    const dependency = dependencyOf(error);
    if (!dependency) return this.logger.error(line, error.stack);
    this.began(dependency, error).failedFlushes++;
    this.logger.debug(line);
  }

  /** The final flush could not reach Redis: says what this instance knows it may have left there. */
  finalFlushCouldNotRun(): void {
    const since = this.flushed ?? { accepted: 0, uncertain: 0 };
    const left = {
      accepted: this.accepted - since.accepted,
      uncertain: this.uncertain - since.uncertain,
      refused: this.outages.get('Redis')?.refusedChanges ?? 0,
      flushed: this.flushed !== null,
    };
    if (left.accepted + left.uncertain === 0) this.logger.log(MESSAGES.finalFlushNothingPending(left));
    else this.logger.warn(MESSAGES.finalFlushMayLeave(left));
  }

  private began(dependency: Dependency, error: Error): Outage {
    let outage = this.outages.get(dependency);
    if (!outage) {
      outage = { failedFlushes: 0, refusedChanges: 0 };
      this.outages.set(dependency, outage);
      this.logger.error(MESSAGES.outageBegan(dependency, reasonOf(error)));
    }
    return outage;
  }

  private ended(dependency: Dependency): void {
    const outage = this.outages.get(dependency);
    if (!outage) return;
    this.outages.delete(dependency);
    this.logger.log(MESSAGES.outageEnded(dependency, outage.failedFlushes, outage.refusedChanges));
  }
}

/** The first cause of `error` in its own words (the module's errors wrap it in advice), on one line. */
function reasonOf(error: Error): string {
  const cause = error.cause instanceof Error ? error.cause : error;
  return cause.message.replace(/\s*\n\s*/g, ' ');
}
