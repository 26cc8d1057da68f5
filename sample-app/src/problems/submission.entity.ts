import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One submission to a problem: its counts (submitted, passed) are recounted from these rows. */
@Entity('submissions')
export class Submission {
  @PrimaryGeneratedColumn()
  id!: number;

  @Index()
  @Column({ name: 'problem_id', type: 'int' })
  problemId!: number;

  @Column({ type: 'boolean' })
  passed!: boolean;

  @CreateDateColumn({ name: 'created_at' })
  createdAt!: Date;
}
