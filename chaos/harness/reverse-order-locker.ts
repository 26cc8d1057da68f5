// A transaction outside the library that locks the counted rows in the opposite order: on its own
// connection, again and again, `BEGIN`, `UPDATE <table> SET title = title WHERE id = ?` for each id from
// the highest to the lowest with a short sleep between rows, `COMMIT`. A flush's UPDATE takes the same
// rows lowest first, so the two wait on each other and, now and then, deadlock. This side keeps its own
// figures (the deadlocks it was chosen to break, its statements that waited), and the server's counters
// are read before and after (they are server-wide: other sessions on the server count too).
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { TestDatabase } from '../../support/databases.js';
import { sleep } from './time.js';

export interface LockerOptions {
  /** Pause between two rows of one transaction, in ms. */
  rowPauseMs: number;
  /** Pause between two transactions, in ms. */
  transactionPauseMs: number;
  /** A statement slower than this waited for a lock held by someone else. */
  waitedMs?: number;
}

export interface LockerFigures {
  transactions: number;
  committed: number;
  /** This transaction was the one the server rolled back to break a deadlock. */
  deadlocks: number;
  /** Lock wait timeouts (not expected: the flushes hold their locks for one statement). */
  lockTimeouts: number;
  /** Row updates of this transaction that waited at least `waitedMs` (for a flush's transaction). */
  waitedStatements: number;
  longestWaitMs: number;
  /** Any other failure, by message: none expected. */
  otherErrors: string[];
  /** Server counters, after minus before: deadlocks (both databases), row lock waits (MariaDB only). */
  serverDeadlocks: number;
  serverRowLockWaits: number | null;
}

interface Connection {
  query(sql: string, params?: unknown[]): Promise<unknown>;
  /** Deadlocks and row lock waits the server has counted so far. */
  counters(): Promise<{ deadlocks: number; rowLockWaits: number | null }>;
  isDeadlock(error: unknown): boolean;
  isLockTimeout(error: unknown): boolean;
  close(): Promise<void>;
}

export class ReverseOrderLocker {
  private running = true;
  private closed = false;
  private loop?: Promise<void>;
  private before = { deadlocks: 0, rowLockWaits: null as number | null };
  private readonly figures: LockerFigures = {
    transactions: 0,
    committed: 0,
    deadlocks: 0,
    lockTimeouts: 0,
    waitedStatements: 0,
    longestWaitMs: 0,
    otherErrors: [],
    serverDeadlocks: 0,
    serverRowLockWaits: null,
  };

  private constructor(
    private readonly connection: Connection,
    private readonly statement: string,
    private readonly ids: number[],
    private readonly options: LockerOptions,
  ) {}

  /** Starts the loop on `table` (unquoted name in the deployment's schema or database) over `ids`. */
  static async start(
    database: TestDatabase,
    table: string,
    ids: number[],
    options: LockerOptions,
  ): Promise<ReverseOrderLocker> {
    const connection = database.name === 'postgres' ? await postgres(database) : await mariadb(database);
    const placeholder = database.name === 'postgres' ? '$1' : '?';
    const quoted = database.name === 'postgres' ? `"${table}"` : `\`${table}\``;
    const descending = [...ids].sort((a, b) => b - a);
    const locker = new ReverseOrderLocker(
      connection,
      `UPDATE ${quoted} SET title = title WHERE id = ${placeholder}`,
      descending,
      options,
    );
    locker.before = await connection.counters();
    locker.loop = locker.run();
    return locker;
  }

  /** Ends the loop after its current transaction. */
  async stop(): Promise<LockerFigures> {
    this.running = false;
    await this.loop;
    return this.figures;
  }

  /**
   * Adds the server's counters (now minus at the start) to the figures and closes the connection.
   * PostgreSQL publishes a session's counts when it goes idle, at most once a second, or when it ends:
   * read this once the sessions that flushed have ended.
   */
  async close(): Promise<LockerFigures> {
    await this.stop();
    if (this.closed) return this.figures;
    this.closed = true;
    try {
      const after = await this.connection.counters();
      this.figures.serverDeadlocks = after.deadlocks - this.before.deadlocks;
      this.figures.serverRowLockWaits =
        after.rowLockWaits === null || this.before.rowLockWaits === null
          ? null
          : after.rowLockWaits - this.before.rowLockWaits;
    } finally {
      await this.connection.close();
    }
    return this.figures;
  }

  private async run(): Promise<void> {
    const { rowPauseMs, transactionPauseMs, waitedMs = 20 } = this.options;
    while (this.running) {
      this.figures.transactions++;
      try {
        await this.connection.query('BEGIN');
        for (const id of this.ids) {
          const started = performance.now();
          await this.connection.query(this.statement, [id]);
          const took = performance.now() - started;
          if (took >= waitedMs) this.figures.waitedStatements++;
          this.figures.longestWaitMs = Math.max(this.figures.longestWaitMs, Math.round(took));
          await sleep(rowPauseMs);
        }
        await this.connection.query('COMMIT');
        this.figures.committed++;
      } catch (error) {
        if (this.connection.isDeadlock(error)) this.figures.deadlocks++;
        else if (this.connection.isLockTimeout(error)) this.figures.lockTimeouts++;
        else this.figures.otherErrors.push((error as Error).message);
        await this.connection.query('ROLLBACK').catch(() => undefined);
      }
      await sleep(transactionPauseMs);
    }
  }
}

async function postgres(database: TestDatabase): Promise<Connection> {
  const options = database.options as {
    host: string;
    port: number;
    username: string;
    database: string;
    schema: string;
  };
  const client = new pg.Client({
    host: options.host,
    port: options.port,
    user: options.username,
    database: options.database,
  });
  await client.connect();
  await client.query(`SET search_path TO "${options.schema}"`);
  const code = (error: unknown) => (error as { code?: string }).code;
  return {
    query: (sql, params) => client.query(sql, params as unknown[]),
    counters: async () => {
      const { rows } = await client.query<{ deadlocks: string }>(
        'SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()',
      );
      return { deadlocks: Number(rows[0].deadlocks), rowLockWaits: null };
    },
    isDeadlock: (error) => code(error) === '40P01',
    isLockTimeout: (error) => code(error) === '55P03',
    close: () => client.end(),
  };
}

async function mariadb(database: TestDatabase): Promise<Connection> {
  const options = database.options as {
    host: string;
    port: number;
    username: string;
    password: string;
    database: string;
  };
  const connection = await mysql.createConnection({
    host: options.host,
    port: options.port,
    user: options.username,
    password: options.password,
    database: options.database,
  });
  const status = async (name: string) => {
    const [rows] = await connection.query(`SHOW GLOBAL STATUS LIKE '${name}'`);
    return Number((rows as Array<{ Value: string }>)[0]?.Value ?? NaN);
  };
  const errno = (error: unknown) => (error as { errno?: number }).errno;
  return {
    query: (sql, params) => connection.query(sql, params),
    counters: async () => ({
      deadlocks: await status('Innodb_deadlocks'),
      rowLockWaits: await status('Innodb_row_lock_waits'),
    }),
    isDeadlock: (error) => errno(error) === 1213,
    isLockTimeout: (error) => errno(error) === 1205,
    close: () => connection.end(),
  };
}
