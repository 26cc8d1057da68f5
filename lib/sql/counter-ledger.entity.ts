import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One row per batch of counter changes written to the database. Its primary key is what makes a flush
 * exactly-once: a batch applied twice fails on it and rolls back. Add this entity to your data source.
 */
@Entity('counter_ledger')
export class CounterLedgerEntry {
  /** The batch id (a UUID). */
  @PrimaryColumn({ name: 'batch_id', type: 'varchar', length: 36 })
  batchId!: string;

  /** Table the batch updated. */
  @Column({ name: 'entity', type: 'varchar', length: 255 })
  entity!: string;

  @Column({ name: 'shard', type: 'int' })
  shard!: number;

  @Column({ name: 'row_count', type: 'int' })
  rowCount!: number;

  /** Epoch milliseconds of the commit; rows older than `ledgerRetentionMs` are pruned. */
  @Index('IDX_counter_ledger_applied_at')
  @Column({ name: 'applied_at', type: 'bigint' })
  appliedAt!: string;
}
