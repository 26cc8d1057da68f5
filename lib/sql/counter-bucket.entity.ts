import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One row per bucket of a windowed counter (`@Counted({ windows })`) of a row: the net change of the
 * counter in that hour or day. The flush adds to it in the transaction that writes the totals, under the
 * same ledger row, so each change is in it exactly once. Add this entity to your data source when a
 * counter declares windows.
 */
@Entity('counter_bucket')
@Index('IDX_counter_bucket_expiry', ['granularity', 'start'])
export class CounterBucket {
  /** The entity's table path, as in the ledger. */
  @PrimaryColumn({ name: 'entity', type: 'varchar', length: 255 })
  entity!: string;

  /** The counter's name (`@Counted('view_count')`). */
  @PrimaryColumn({ name: 'counter', type: 'varchar', length: 64 })
  counter!: string;

  /** The row's primary key, as text. */
  @PrimaryColumn({ name: 'row_id', type: 'varchar', length: 255 })
  rowId!: string;

  /** 'hour' or 'day'. */
  @PrimaryColumn({ name: 'granularity', type: 'varchar', length: 8 })
  granularity!: string;

  /** When the bucket starts: Unix seconds, UTC. */
  @PrimaryColumn({ name: 'bucket_start', type: 'bigint' })
  start!: string;

  /** The counter's net change in the bucket. */
  @Column({ name: 'value', type: 'bigint', default: 0 })
  value!: string;
}
