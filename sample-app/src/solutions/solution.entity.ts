import { Column, Entity, JoinColumn, ManyToOne, OneToMany, PrimaryGeneratedColumn, type Relation } from 'typeorm';
import { Counted } from 'nestjs-counter';
import { Comment } from '../comments/comment.entity.js';
import { Problem } from '../problems/problem.entity.js';
import { countRows } from '../common/count-rows.source.js';
import { countLikes } from '../likes/like.entity.js';

@Entity('solutions')
export class Solution {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'problem_id', type: 'int' })
  problemId!: number;

  @ManyToOne(() => Problem, (problem) => problem.solutions, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'problem_id' })
  problem?: Relation<Problem>;

  @Column({ type: 'varchar', length: 200 })
  title!: string;

  @Column({ type: 'text' })
  content!: string;

  @Counted('view_count', { min: 0, windows: ['hour', 'day'] })
  @Column({ name: 'view_count', type: 'int', default: 0 })
  viewCount!: number;

  // Its sums over the last 24 hours rank "Trending today" (SolutionsService.trending).
  @Counted('like_count', { min: 0, source: countLikes('solution'), windows: ['hour', 'day'], rolling: ['24h'] })
  @Column({ name: 'like_count', type: 'int', default: 0 })
  likeCount!: number;

  @Counted('comment_count', { min: 0, source: countRows(() => Comment, 'solutionId') })
  @Column({ name: 'comment_count', type: 'int', default: 0 })
  commentCount!: number;

  @OneToMany(() => Comment, (comment) => comment.solution)
  comments?: Relation<Comment>[];
}
