import type { Logger as TypeOrmLogger } from 'typeorm';

/**
 * A TypeORM logger that counts every statement its DataSource sends, transaction control (`START
 * TRANSACTION`, `COMMIT`, `ROLLBACK`) included: the query runners of every driver report each statement
 * to `logQuery` before running it, so a statement that then fails is counted too. Pass it to
 * `startBenchApp({ logger })`.
 */
export class StatementCounter implements TypeOrmLogger {
  private sent = 0;
  private failed = 0;
  private firstFailure?: string;

  /** Statements sent since the DataSource was created. */
  get statements(): number {
    return this.sent;
  }

  /** Statements that failed, and the first failure's message. */
  get failures(): { count: number; first?: string } {
    return { count: this.failed, first: this.firstFailure };
  }

  logQuery(): void {
    this.sent++;
  }

  logQueryError(error: string | Error, query: string): void {
    this.failed++;
    this.firstFailure ??= `${typeof error === 'string' ? error : error.message} (${query.slice(0, 120)})`;
  }

  logQuerySlow(): void {}

  logSchemaBuild(): void {}

  logMigration(): void {}

  log(): void {}
}
