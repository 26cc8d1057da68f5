import { Injectable } from '@nestjs/common';
import { CounterBucket, CounterLedgerEntry, CounterRollingSum, CounterRollingWindow } from 'nestjs-counter';
import { DataSource, type EntitySubscriberInterface, type QueryRunner } from 'typeorm';

/** SQL statements of the flushes' transactions, counted since the app started. */
export interface FlushStatements {
  /**
   * BEGIN, the ledger INSERT, the UPDATEs, the buckets' INSERT (windowed counters), the rolling sums'
   * INSERT (rolling windows; the first time, also the window's INSERT and its sums' DELETE and INSERT) and
   * COMMIT (or ROLLBACK) of every flush transaction.
   */
  statements: number;
  /** The UPDATEs among them: one per table and transaction (more past the dialect's rows per statement). */
  updates: number;
  /** Transactions that recorded a batch in the ledger: the flushes'. */
  transactions: number;
}

interface OpenTransaction {
  statements: number;
  updates: number;
  /** It inserted into the ledger: a flush's transaction, not one of the app's. */
  flush: boolean;
}

/** What the subscriber reads of TypeORM's AfterQueryEvent (generic in TypeORM 0.3, not in 1.x). */
interface StatementRun {
  queryRunner: QueryRunner;
  query: string;
  success: boolean;
}

const BEGIN = /^\s*(BEGIN|START TRANSACTION)\b/i;
const END = /^\s*(COMMIT|ROLLBACK)\s*$/i;
const UPDATE = /^\s*UPDATE\b/i;
/** An INSERT or a DELETE, and the table it writes, quoted as the driver quotes it. */
const WRITE = /^\s*(INSERT INTO|DELETE FROM)\s+([^\s(]+)/i;

/** The table an INSERT or a DELETE writes, unquoted, and whether it inserts; undefined for other statements. */
function writeOf(query: string): { table: string; insert: boolean } | undefined {
  const match = WRITE.exec(query);
  if (!match) return undefined;
  const table = match[2]!.replace(/[`"]/g, '').split('.').at(-1)!;
  return { table, insert: match[1]!.toUpperCase() === 'INSERT INTO' };
}

/**
 * Counts what the flushes send to the database, as the database sees it: a TypeORM subscriber on every
 * statement. A transaction that inserts into the ledger is a flush's; its BEGIN, UPDATEs, COMMIT and
 * writes to the library's tables (ledger, buckets, rolling windows and sums) are counted, its reads not.
 * Other statements that run on its connection meanwhile (on SQLite, TypeORM's one connection also
 * carries the requests' queries) are not the flush's, and not counted.
 */
@Injectable()
export class SqlStatementCounter implements EntitySubscriberInterface {
  private readonly totals: FlushStatements = { statements: 0, updates: 0, transactions: 0 };
  private readonly open = new WeakMap<QueryRunner, OpenTransaction>();
  private readonly ledgerTable: string;
  /** The library's tables a flush writes besides the ledger. */
  private readonly windowTables: Set<string>;

  constructor(dataSource: DataSource) {
    this.ledgerTable = dataSource.getMetadata(CounterLedgerEntry).tableName;
    this.windowTables = new Set(
      [CounterBucket, CounterRollingWindow, CounterRollingSum].map((table) => dataSource.getMetadata(table).tableName),
    );
    dataSource.subscribers.push(this);
  }

  /** The counts so far; the difference of two readings is what the flushes between them sent. */
  read(): FlushStatements {
    return { ...this.totals };
  }

  afterQuery({ queryRunner, query, success }: StatementRun): void {
    if (BEGIN.test(query)) {
      if (success) this.open.set(queryRunner, { statements: 1, updates: 0, flush: false });
      return;
    }
    const transaction = this.open.get(queryRunner);
    if (!transaction) return;
    if (UPDATE.test(query)) {
      transaction.statements++;
      transaction.updates++;
      return;
    }
    const write = writeOf(query);
    if (write?.table === this.ledgerTable && write.insert) {
      transaction.statements++;
      transaction.flush ||= success;
    } else if (write && this.windowTables.has(write.table)) {
      transaction.statements++;
    } else if (END.test(query)) {
      transaction.statements++;
      this.open.delete(queryRunner);
      if (transaction.flush) this.add(transaction);
    }
  }

  private add({ statements, updates }: OpenTransaction): void {
    this.totals.statements += statements;
    this.totals.updates += updates;
    this.totals.transactions++;
  }
}
