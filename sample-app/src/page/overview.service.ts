import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { Problem } from '../problems/problem.entity.js';

/** How many problems the page shows. */
const PROBLEMS_SHOWN = 20;

/** Reads what the page shows: problems with their solutions and those solutions' comments (with their authors), in id order. */
@Injectable()
export class OverviewService {
  constructor(@InjectRepository(Problem) private readonly problems: Repository<Problem>) {}

  async problemsWithSolutionsAndComments(): Promise<Problem[]> {
    return this.problems.find({
      relations: { solutions: { comments: { author: true } } },
      order: { id: 'ASC', solutions: { id: 'ASC', comments: { id: 'ASC' } } },
      take: PROBLEMS_SHOWN,
    });
  }
}
