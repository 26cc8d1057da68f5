import { Controller, Get } from '@nestjs/common';
import { LiveCounts } from 'nestjs-counter';
import type { Problem } from '../problems/problem.entity.js';
import { OverviewService } from './overview.service.js';

@Controller('overview')
export class OverviewController {
  constructor(private readonly overview: OverviewService) {}

  /** GET /overview: the page's data; `@LiveCounts()` overlays live values on every problem, solution and comment. */
  @Get()
  @LiveCounts()
  async get(): Promise<{ problems: Problem[] }> {
    return { problems: await this.overview.problemsWithSolutionsAndComments() };
  }
}
