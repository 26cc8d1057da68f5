import { Column, Entity, ManyToOne, OneToMany, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { Counted } from '../../lib/index.js';

@Entity('test_article')
export class Article {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 100, default: '' })
  title!: string;

  @Counted('like_count', { min: 0 })
  @Column({ name: 'like_count', type: 'int', default: 0 })
  likeCount!: number;

  @Counted('view_count')
  @Column({ name: 'view_count', type: 'bigint', default: 0 })
  viewCount!: number;

  @OneToMany(() => Remark, (remark) => remark.article)
  remarks?: Remark[];
}

/** String primary keys, including ones with `{`, `}` and `:` that must not break keys. */
@Entity('test_remark')
export class Remark {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Counted('reply_count', { min: 0, max: 1_000_000 })
  @Column({ name: 'reply_count', type: 'int', default: 0 })
  replyCount!: number;

  @ManyToOne(() => Article, (article) => article.remarks, { nullable: true })
  article?: Article;
}

/** A generated UUID primary key (a native uuid column on PostgreSQL). */
@Entity('test_badge')
export class Badge {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Counted('award_count')
  @Column({ name: 'award_count', type: 'int', default: 0 })
  awardCount!: number;
}

export const ENTITIES = [Article, Remark, Badge];

/** A nullable counter beside a NOT NULL one (not in ENTITIES: only the tests of NULL columns load it). */
@Entity('test_tally')
export class Tally {
  @PrimaryGeneratedColumn()
  id!: number;

  @Counted('maybe_count')
  @Column({ name: 'maybe_count', type: 'int', nullable: true })
  maybeCount!: number | null;

  @Counted('sure_count')
  @Column({ name: 'sure_count', type: 'int', default: 0 })
  sureCount!: number;
}

/** `test_article` as an instance deployed before `view_count` was counted sees it: a plain column. */
@Entity('test_article')
export class ArticleBeforeViewCount {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 100, default: '' })
  title!: string;

  @Counted('like_count', { min: 0 })
  @Column({ name: 'like_count', type: 'int', default: 0 })
  likeCount!: number;

  @Column({ name: 'view_count', type: 'bigint', default: 0 })
  viewCount!: number;
}
