import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One row per rolling window of a counter (`@Counted({ rolling: ['24h'] })`): where the window starts,
 * which the flush and its upkeep move forward an hour (or a day) at a time. The flush creates it. Add
 * this entity, and CounterRollingSum, to your data source when a counter declares rolling windows.
 */
@Entity('counter_rolling_window')
export class CounterRollingWindow {
  /** The entity's table path, as in the ledger. */
  @PrimaryColumn({ name: 'entity', type: 'varchar', length: 255 })
  entity!: string;

  /** The counter's name (`@Counted('view_count')`). */
  @PrimaryColumn({ name: 'counter', type: 'varchar', length: 64 })
  counter!: string;

  /** The window as declared: '24h', '7d'. */
  @PrimaryColumn({ name: 'window', type: 'varchar', length: 16 })
  window!: string;

  /**
   * The start (Unix seconds, UTC) of the oldest bucket, of the counter's finest granularity, that the
   * window's sums count.
   */
  @Column({ name: 'from', type: 'bigint' })
  from!: string;
}
