import type { DataSource, QueryRunner } from 'typeorm';
import type { CounterDialect } from './counter-dialect.js';
import { quotedTablePath } from './counter-dialect.js';
import { onPrimary } from './on-primary.js';
import { CounterLedgerEntry } from './counter-ledger.entity.js';
import type { DeltaBatch } from '../model/delta-batch.js';

/** The columns a batch's ledger row fills, by property. */
const COLUMNS = ['batchId', 'entity', 'shard', 'rowCount', 'appliedAt'] as const;

/**
 * The ledger table (CounterLedgerEntry): one row per batch written, whose primary key, the batch id,
 * makes a batch written twice fail and roll back. That is what makes recovery exactly-once.
 */
export class CounterLedger {
  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: CounterDialect,
  ) {}

  /**
   * Inserts the batches' ledger rows in the transaction of `runner`; false, with nothing inserted, when
   * the ledger has one of them already (another flusher committed it).
   */
  async record(runner: QueryRunner, batches: DeltaBatch[]): Promise<boolean> {
    const now = Date.now();
    const params = batches.flatMap((batch) => [
      batch.batchId,
      batch.entity.key,
      batch.shard,
      batch.rows.ids.length,
      now,
    ]);
    const tuples = batches.map(
      (_, b) => `(${COLUMNS.map((_, c) => this.dialect.placeholder(b * COLUMNS.length + c + 1)).join(', ')})`,
    );
    try {
      const columns = COLUMNS.map((name) => this.column(name)).join(', ');
      await runner.query(`INSERT INTO ${this.table()} (${columns}) VALUES ${tuples.join(', ')}`, params);
      return true;
    } catch (error) {
      if (this.dialect.isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /** Whether the batch was committed: asked of the primary, since a replica behind it would say no. */
  async has(batchId: string): Promise<boolean> {
    const rows: unknown[] = await onPrimary(this.dataSource, (manager) =>
      manager.query(this.selectIfRecorded('1 AS found', 1), [batchId]),
    );
    return rows.length > 0;
  }

  /**
   * `SELECT <columns>` giving one row when the ledger holds the batch whose id is parameter `position`,
   * none otherwise: for a statement that reads something else in the same snapshot (`UNION ALL`).
   */
  selectIfRecorded(columns: string, position: number): string {
    return (
      `SELECT ${columns} FROM ${this.table()} ` +
      `WHERE ${this.column('batchId')} = ${this.dialect.placeholder(position)}`
    );
  }

  /**
   * `SELECT <columns>` giving one row per batch the ledger holds among those whose ids are parameters
   * `positions`; `columns` names the batch id column as it is given.
   */
  selectRecordedAmong(columns: (batchIdColumn: string) => string, positions: number[]): string {
    const column = this.column('batchId');
    const ids = positions.map((position) => this.dialect.placeholder(position)).join(', ');
    return `SELECT ${columns(column)} FROM ${this.table()} WHERE ${column} IN (${ids})`;
  }

  /**
   * The shards of `entityKey` with a batch in the ledger whose id starts with `batchIdPrefix` (a hex
   * deployment tag, see BatchIds), pruned rows aside: the shards that deployment ever flushed.
   */
  async flushedShards(entityKey: string, batchIdPrefix: string): Promise<Set<number>> {
    const rows: Array<{ shard: number | string }> = await this.dataSource.query(
      `SELECT DISTINCT ${this.column('shard')} AS shard FROM ${this.table()} ` +
        `WHERE ${this.column('entity')} = ${this.dialect.placeholder(1)} ` +
        `AND ${this.column('batchId')} LIKE ${this.dialect.placeholder(2)}`,
      [entityKey, `${batchIdPrefix}-%`],
    );
    return new Set(rows.map((row) => Number(row.shard)));
  }

  /** Deletes rows older than `retentionMs`. */
  async prune(retentionMs: number): Promise<void> {
    await this.dataSource.query(
      `DELETE FROM ${this.table()} WHERE ${this.column('appliedAt')} < ${this.dialect.placeholder(1)}`,
      [Date.now() - retentionMs],
    );
  }

  private table(): string {
    return quotedTablePath(this.dataSource.driver, this.dataSource.getMetadata(CounterLedgerEntry).tablePath);
  }

  private column(propertyName: (typeof COLUMNS)[number]): string {
    const metadata = this.dataSource.getMetadata(CounterLedgerEntry);
    return this.dataSource.driver.escape(metadata.findColumnWithPropertyName(propertyName)!.databaseName);
  }
}
