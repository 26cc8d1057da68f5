import { Injectable } from '@nestjs/common';
import { CounterService } from 'nestjs-counter';
import { Problem } from './problem.entity.js';

export interface SubmissionResult {
  problemId: number;
  passed: boolean;
  submission_count: number;
  passed_count: number;
}

/** Counts submissions to a problem. */
@Injectable()
export class SubmissionsService {
  constructor(private readonly counters: CounterService) {}

  /** submission_count first, so that passed_count never runs ahead of it. 404 for a missing problem. */
  async submit(problemId: number, passed: boolean): Promise<SubmissionResult> {
    const submissions = await this.counters.increment(Problem, problemId, 'submission_count');
    const passes = passed
      ? await this.counters.increment(Problem, problemId, 'passed_count')
      : await this.counters.get(Problem, problemId, 'passed_count');
    return { problemId, passed, submission_count: submissions, passed_count: passes };
  }
}
