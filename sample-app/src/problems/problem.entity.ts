import { Column, Entity, OneToMany, PrimaryGeneratedColumn, type Relation } from 'typeorm';
import { Counted } from 'nestjs-counter';
import { Solution } from '../solutions/solution.entity.js';

@Entity('problems')
export class Problem {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 200 })
  title!: string;

  @Column({ type: 'text' })
  statement!: string;

  @Counted('submission_count', { min: 0 })
  @Column({ name: 'submission_count', type: 'int', default: 0 })
  submissionCount!: number;

  @Counted('passed_count', { min: 0 })
  @Column({ name: 'passed_count', type: 'int', default: 0 })
  passedCount!: number;

  @Counted('solution_count', { min: 0 })
  @Column({ name: 'solution_count', type: 'int', default: 0 })
  solutionCount!: number;

  @OneToMany(() => Solution, (solution) => solution.problem)
  solutions?: Relation<Solution>[];
}
