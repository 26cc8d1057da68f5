import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { CounterService } from 'nestjs-counter';
import type { Repository } from 'typeorm';
import { Problem } from './problem.entity.js';
import { Submission } from './submission.entity.js';

export interface SubmissionResult {
  problemId: number;
  passed: boolean;
  submission_count: number;
  passed_count: number;
}

/** Stores submissions as rows and counts them: the counts can be recounted from the rows. */
@Injectable()
export class SubmissionsService {
  constructor(
    private readonly counters: CounterService,
    @InjectRepository(Submission) private readonly submissions: Repository<Submission>,
  ) {}

  /**
   * submission_count first, so that passed_count never runs ahead of it. Each change carries a key made
   * from the submission's row, so that a retry of it counts once. 404 for a missing problem.
   */
  async submit(problemId: number, passed: boolean): Promise<SubmissionResult> {
    // The row is only a submission once the problem exists: the count's 404 comes first.
    await this.counters.get(Problem, problemId, 'submission_count');
    const { id } = await this.submissions.save(this.submissions.create({ problemId, passed }));
    const submissions = await this.counters.increment(Problem, problemId, 'submission_count', 1, {
      idempotencyKey: `submission:${id}`,
    });
    const passes = passed
      ? await this.counters.increment(Problem, problemId, 'passed_count', 1, { idempotencyKey: `passed:${id}` })
      : await this.counters.get(Problem, problemId, 'passed_count');
    return { problemId, passed, submission_count: submissions, passed_count: passes };
  }
}
