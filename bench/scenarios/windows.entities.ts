import { Column, Entity, PrimaryColumn } from 'typeorm';
import { Counted } from '../../lib/index.js';

/**
 * BenchPost's shape (`test/fixtures/entities.ts`) with its view counter kept per hour and per day: the
 * windows scenario sets the two side by side, so that the windows are the only difference.
 */
@Entity('bench_windowed_post')
export class WindowedBenchPost {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Counted('like_count', { min: 0 })
  @Column({ name: 'like_count', type: 'int', default: 0 })
  likeCount!: number;

  @Counted('view_count', { windows: ['hour', 'day'] })
  @Column({ name: 'view_count', type: 'bigint', default: 0 })
  viewCount!: number;

  @Counted('comment_count', { min: 0 })
  @Column({ name: 'comment_count', type: 'int', default: 0 })
  commentCount!: number;
}

/**
 * A post whose views are ranked over the last 24 hours: the `top` part of the windows scenario seeds it
 * with a day of changes and reads its rolling sums.
 */
@Entity('bench_top_post')
export class TopBenchPost {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Counted('view_count', { windows: ['hour', 'day'], rolling: ['24h'] })
  @Column({ name: 'view_count', type: 'bigint', default: 0 })
  viewCount!: number;
}

/** TopBenchPost's twin, changed through `increment` and `flush()` to check that the seeding writes the same. */
@Entity('bench_top_sample')
export class TopSamplePost {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Counted('view_count', { windows: ['hour', 'day'], rolling: ['24h'] })
  @Column({ name: 'view_count', type: 'bigint', default: 0 })
  viewCount!: number;
}
