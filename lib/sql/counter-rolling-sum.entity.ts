import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One row per row and rolling window of a counter: the sum of the row's buckets (of the counter's
 * finest granularity) from the window's start (CounterRollingWindow.from) on, kept by the flush in the
 * transaction that writes the buckets; `top` reads it by its index. A row whose sum is 0 may be absent.
 */
@Entity('counter_rolling_sum')
@Index('IDX_counter_rolling_sum_value', ['entity', 'counter', 'window', 'value'])
export class CounterRollingSum {
  /** The entity's table path, as in the ledger. */
  @PrimaryColumn({ name: 'entity', type: 'varchar', length: 255 })
  entity!: string;

  /** The counter's name. */
  @PrimaryColumn({ name: 'counter', type: 'varchar', length: 64 })
  counter!: string;

  /** The window as declared: '24h', '7d'. */
  @PrimaryColumn({ name: 'window', type: 'varchar', length: 16 })
  window!: string;

  /** The row's primary key, as text. */
  @PrimaryColumn({ name: 'row_id', type: 'varchar', length: 255 })
  rowId!: string;

  /** The counter's net change in the window. */
  @Column({ name: 'value', type: 'bigint', default: 0 })
  value!: string;
}
