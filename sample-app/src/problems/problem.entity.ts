import { Column, Entity, OneToMany, PrimaryGeneratedColumn, type Relation } from 'typeorm';
import { Counted } from 'nestjs-counter';
import { countRows } from '../common/count-rows.source.js';
import { Solution } from '../solutions/solution.entity.js';
import { Submission } from './submission.entity.js';

@Entity('problems')
export class Problem {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 200 })
  title!: string;

  @Column({ type: 'text' })
  statement!: string;

  @Counted('submission_count', { min: 0, source: countRows(() => Submission, 'problemId') })
  @Column({ name: 'submission_count', type: 'int', default: 0 })
  submissionCount!: number;

  @Counted('passed_count', {
    min: 0,
    source: countRows(() => Submission, 'problemId', { sql: 'row.passed = :passed', params: { passed: true } }),
  })
  @Column({ name: 'passed_count', type: 'int', default: 0 })
  passedCount!: number;

  @Counted('solution_count', { min: 0, source: countRows(() => Solution, 'problemId') })
  @Column({ name: 'solution_count', type: 'int', default: 0 })
  solutionCount!: number;

  @OneToMany(() => Solution, (solution) => solution.problem)
  solutions?: Relation<Solution>[];
}
