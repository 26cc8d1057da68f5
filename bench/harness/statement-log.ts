import type { Logger as TypeOrmLogger } from 'typeorm';

export interface StatementTotals {
  statements: number;
  /** Time inside the driver's `query`, summed over connections (so above wall time when they overlap). */
  seconds: number;
}

/**
 * A TypeORM logger that counts every statement its DataSource sends, transaction control (`START
 * TRANSACTION`, `COMMIT`, `ROLLBACK`) included: the query runners of every driver report each statement
 * to `logQuery` before running it, so a statement that then fails is counted too. Pass it to
 * `startBenchApp({ logger })`.
 *
 * It also adds up how long statements took, when the data source gets `STATEMENT_TIMING_OPTIONS`: the
 * drivers time a statement only to report it as slow, and with that threshold every statement is
 * "slow". Their clock is `Date.now()`, so each time is in whole milliseconds; over hundreds of
 * statements the rounding evens out.
 */
export class StatementLog implements TypeOrmLogger {
  private sent = 0;
  private milliseconds = 0;
  private failed = 0;
  private firstFailure?: string;
  private taken = { sent: 0, milliseconds: 0 };

  /** Statements sent since the DataSource was created. */
  get statements(): number {
    return this.sent;
  }

  /** Statements that failed, and the first failure's message. */
  get failures(): { count: number; first?: string } {
    return { count: this.failed, first: this.firstFailure };
  }

  /** Statements and their time since the last call. */
  take(): StatementTotals {
    const totals = {
      statements: this.sent - this.taken.sent,
      seconds: (this.milliseconds - this.taken.milliseconds) / 1000,
    };
    this.taken = { sent: this.sent, milliseconds: this.milliseconds };
    return totals;
  }

  logQuery(): void {
    this.sent++;
  }

  logQuerySlow(time: number): void {
    this.milliseconds += time;
  }

  logQueryError(error: string | Error, query: string): void {
    this.failed++;
    this.firstFailure ??= `${typeof error === 'string' ? error : error.message} (${query.slice(0, 120)})`;
  }

  logSchemaBuild(): void {}

  logMigration(): void {}

  log(): void {}
}

/** Data source options that make every statement of at least 1 ms reach `logQuerySlow`. */
export const STATEMENT_TIMING_OPTIONS = { maxQueryExecutionTime: Number.MIN_VALUE };
