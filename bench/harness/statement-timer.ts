import type { Logger } from 'typeorm';

export interface StatementTotals {
  statements: number;
  /** Time inside the driver's `query`, summed over connections (so above wall time when they overlap). */
  seconds: number;
}

/**
 * A TypeORM logger that counts statements and adds up how long each took. The drivers time a statement
 * only to report it as slow, so the data source must also get `STATEMENT_TIMER_OPTIONS`: with that
 * threshold every statement is "slow". Their clock is `Date.now()`, so each time is in whole
 * milliseconds; over hundreds of statements the rounding evens out.
 */
export class StatementTimer implements Logger {
  private statements = 0;
  private milliseconds = 0;

  /** The totals since the last call. */
  take(): StatementTotals {
    const totals = { statements: this.statements, seconds: this.milliseconds / 1000 };
    this.statements = 0;
    this.milliseconds = 0;
    return totals;
  }

  logQuery(): void {
    this.statements++;
  }

  logQuerySlow(time: number): void {
    this.milliseconds += time;
  }

  logQueryError(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

/** Data source options that make every statement of at least 1 ms reach `logQuerySlow`. */
export const STATEMENT_TIMER_OPTIONS = { maxQueryExecutionTime: Number.MIN_VALUE };
