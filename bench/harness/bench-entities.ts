import { Column, Entity, PrimaryColumn } from 'typeorm';
import { Counted } from '../../lib/index.js';

// Three entities shaped like the counters users move off their database: three counters per row, an
// integer key. Ids are given by the benchmark (1..n), so baselines can address the same rows.

@Entity('bench_post')
export class BenchPost {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Counted('like_count', { min: 0 })
  @Column({ name: 'like_count', type: 'int', default: 0 })
  likeCount!: number;

  @Counted('view_count')
  @Column({ name: 'view_count', type: 'bigint', default: 0 })
  viewCount!: number;

  @Counted('comment_count', { min: 0 })
  @Column({ name: 'comment_count', type: 'int', default: 0 })
  commentCount!: number;
}

@Entity('bench_video')
export class BenchVideo {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Counted('like_count', { min: 0 })
  @Column({ name: 'like_count', type: 'int', default: 0 })
  likeCount!: number;

  @Counted('view_count')
  @Column({ name: 'view_count', type: 'bigint', default: 0 })
  viewCount!: number;

  @Counted('comment_count', { min: 0 })
  @Column({ name: 'comment_count', type: 'int', default: 0 })
  commentCount!: number;
}

@Entity('bench_answer')
export class BenchAnswer {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Counted('like_count', { min: 0 })
  @Column({ name: 'like_count', type: 'int', default: 0 })
  likeCount!: number;

  @Counted('view_count')
  @Column({ name: 'view_count', type: 'bigint', default: 0 })
  viewCount!: number;

  @Counted('comment_count', { min: 0 })
  @Column({ name: 'comment_count', type: 'int', default: 0 })
  commentCount!: number;
}

export const BENCH_ENTITIES = [BenchPost, BenchVideo, BenchAnswer];
export type BenchEntity = (typeof BENCH_ENTITIES)[number];
export const COUNTER_NAMES = ['like_count', 'view_count', 'comment_count'] as const;
