import { QueryFailedError, type DataSource, type QueryRunner } from 'typeorm';

interface PreparedStatement {
  run(...params: unknown[]): { changes: number };
}

interface BetterSqlite3Connection {
  prepare(sql: string): PreparedStatement;
}

/** Compiled statements kept per connection; the flush has a few texts per table (see sqlite.ts). */
const MAX_PREPARED = 100;

/**
 * Runs the flush's batch UPDATEs on better-sqlite3's connection itself (the one connection the driver
 * has, so inside the transaction its query runner began) instead of through TypeORM's
 * `QueryRunner.query`. For every statement that copies the parameters (to turn booleans into 0/1, which
 * these never are), awaits the query subscribers and builds a result: with 1,024-parameter statements
 * about 17 MB of garbage per flush of 100,000 rows (V8's sampling heap profiler), which Node's thread
 * collects, and better-sqlite3 runs SQLite on that same thread. A scratch copy of the flush bench's
 * SQLite stage run with the library's build before and after this change, three processes of each in
 * turns, ten flushes each: the thread's CPU per flush 98.1-99.6 ms against 104.1-108.1 ms, the flush
 * 127.9-139.4 against 137.3-140.9 ms (medians of flushes 3-10; 2026-11-25).
 *
 * What users see of TypeORM's `query` stays: the data source's logger gets each statement (as slow
 * past `maxQueryExecutionTime`, and its error when it fails), and a failure is a `QueryFailedError`
 * around the driver's error. Query subscribers (`beforeQuery`, `afterQuery`) do not see these
 * statements; the transaction's other statements (BEGIN, the ledger's INSERT, COMMIT) still go
 * through TypeORM.
 */
export class BetterSqlite3Statements {
  private readonly prepared = new Map<string, PreparedStatement>();
  private preparedOn?: BetterSqlite3Connection;

  /** Statements for the data source when its driver is better-sqlite3; undefined for any other. */
  static of(dataSource: DataSource): BetterSqlite3Statements | undefined {
    return dataSource.options.type === 'better-sqlite3' ? new BetterSqlite3Statements(dataSource) : undefined;
  }

  private constructor(private readonly dataSource: DataSource) {}

  /** Runs a statement that writes, on the connection `runner` is a query runner of; returns the rows it changed. */
  run(runner: QueryRunner, sql: string, params: unknown[]): number {
    const { logger } = this.dataSource;
    logger.logQuery(sql, params, runner);
    const started = Date.now();
    let changes: number;
    try {
      changes = this.statement(sql).run(...params).changes;
    } catch (error) {
      logger.logQueryError(error as Error, sql, params, runner);
      throw new QueryFailedError(sql, params, error as Error);
    }
    const took = Date.now() - started;
    const slowAfter = this.dataSource.options.maxQueryExecutionTime;
    if (slowAfter && took > slowAfter) logger.logQuerySlow(took, sql, params, runner);
    return changes;
  }

  private statement(sql: string): PreparedStatement {
    const connection = (this.dataSource.driver as unknown as { databaseConnection: BetterSqlite3Connection })
      .databaseConnection;
    // A data source destroyed and initialized again has a new connection: statements are the old one's.
    if (connection !== this.preparedOn) {
      this.prepared.clear();
      this.preparedOn = connection;
    }
    let statement = this.prepared.get(sql);
    if (statement === undefined) {
      statement = connection.prepare(sql);
      this.prepared.set(sql, statement);
      if (this.prepared.size > MAX_PREPARED) this.prepared.delete(this.prepared.keys().next().value!);
    }
    return statement;
  }
}
