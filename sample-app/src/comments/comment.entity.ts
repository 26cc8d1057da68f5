import { Column, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn, type Relation } from 'typeorm';
import { Counted } from 'nestjs-counter';
import { Solution } from '../solutions/solution.entity.js';
import { countRows } from '../common/count-rows.source.js';
import { countLikes } from '../likes/like.entity.js';
import { User } from '../users/user.entity.js';

@Entity('comments')
export class Comment {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'solution_id', type: 'int' })
  solutionId!: number;

  @ManyToOne(() => Solution, (solution) => solution.comments, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'solution_id' })
  solution?: Relation<Solution>;

  /** The comment this one replies to (same solution), or null for a top-level comment. */
  @Column({ name: 'parent_id', type: 'int', nullable: true })
  parentId!: number | null;

  @Column({ type: 'text' })
  content!: string;

  /** Who wrote it: the signed-in user, or null for a comment posted without one (curl). */
  @Column({ name: 'author_id', type: 'int', nullable: true })
  authorId!: number | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'author_id' })
  author?: Relation<User> | null;

  @Counted('like_count', { min: 0, source: countLikes('comment') })
  @Column({ name: 'like_count', type: 'int', default: 0 })
  likeCount!: number;

  @Counted('reply_count', { min: 0, source: countRows(() => Comment, 'parentId') })
  @Column({ name: 'reply_count', type: 'int', default: 0 })
  replyCount!: number;
}
