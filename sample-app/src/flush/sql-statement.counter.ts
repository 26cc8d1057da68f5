import { Injectable } from '@nestjs/common';
import { CounterBucket, CounterLedgerEntry } from 'nestjs-counter';
import { DataSource, type EntitySubscriberInterface, type QueryRunner } from 'typeorm';

/** SQL statements of the flushes' transactions, counted since the app started. */
export interface FlushStatements {
  /**
   * BEGIN, the ledger INSERT, the UPDATEs, the buckets' INSERT (windowed counters) and COMMIT (or ROLLBACK)
   * of every flush transaction.
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
const INSERT = /^\s*INSERT INTO\b/i;

/**
 * Counts what the flushes send to the database, as the database sees it: a TypeORM subscriber on every
 * statement. A transaction that inserts into the ledger is a flush's; its BEGIN, ledger INSERT,
 * UPDATEs, buckets' INSERT and COMMIT are counted. Other statements that run on its connection
 * meanwhile (on SQLite, TypeORM's one connection also carries the requests' queries) are not the
 * flush's, and not counted.
 */
@Injectable()
export class SqlStatementCounter implements EntitySubscriberInterface {
  private readonly totals: FlushStatements = { statements: 0, updates: 0, transactions: 0 };
  private readonly open = new WeakMap<QueryRunner, OpenTransaction>();
  private readonly ledgerTable: string;
  private readonly bucketTable: string;

  constructor(dataSource: DataSource) {
    this.ledgerTable = dataSource.getMetadata(CounterLedgerEntry).tableName;
    this.bucketTable = dataSource.getMetadata(CounterBucket).tableName;
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
    } else if (INSERT.test(query) && query.includes(this.ledgerTable)) {
      transaction.statements++;
      transaction.flush ||= success;
    } else if (INSERT.test(query) && query.includes(this.bucketTable)) {
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
