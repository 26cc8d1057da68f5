import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
  Unique,
  type Relation,
} from 'typeorm';
import { countRows } from '../common/count-rows.source.js';
import { User } from '../users/user.entity.js';

/** What a user can like. */
export type LikeTarget = 'solution' | 'comment';

/** One user's like of one solution or comment: the unique key makes a second like insert nothing. */
@Entity('likes')
@Unique('likes_user_target', ['userId', 'targetType', 'targetId'])
@Index('likes_target', ['targetType', 'targetId']) // the like counts' source counts by target
export class Like {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'user_id', type: 'int' })
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: Relation<User>;

  @Column({ name: 'target_type', type: 'varchar', length: 16 })
  targetType!: LikeTarget;

  @Column({ name: 'target_id', type: 'int' })
  targetId!: number;

  @CreateDateColumn({ name: 'created_at' })
  createdAt!: Date;
}

/** The source of a like count: the rows of `likes` of that kind of target. */
export const countLikes = (targetType: LikeTarget) =>
  countRows(() => Like, 'targetId', { sql: 'row.targetType = :targetType', params: { targetType } });
