import { Column, Entity, PrimaryColumn } from 'typeorm';
import { Counted } from '../../lib/index.js';

/**
 * Scenario 17's rows (chaos/scenarios/bucket-flushes-killed.chaos.ts): a counter kept per hour and per
 * day, without bounds, so that decrements are never refused. Only workers started with `windowed` count it.
 */
@Entity('chaos_clip')
export class Clip {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Counted('play_count', { windows: ['hour', 'day'] })
  @Column({ name: 'play_count', type: 'bigint', default: 0 })
  playCount!: number;
}
