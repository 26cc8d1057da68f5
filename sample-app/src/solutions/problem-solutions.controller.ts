import { Body, Controller, Param, ParseIntPipe, Post } from '@nestjs/common';
import { LiveCounts } from 'nestjs-counter';
import { stringField } from '../common/body-field.validator.js';
import { Solution } from './solution.entity.js';
import { SolutionsService } from './solutions.service.js';

@Controller('problems/:id/solutions')
export class ProblemSolutionsController {
  constructor(private readonly solutions: SolutionsService) {}

  /** POST /problems/:id/solutions `{ "title": "…", "content": "…" }` */
  @Post()
  @LiveCounts()
  create(@Param('id', ParseIntPipe) problemId: number, @Body() body: Record<string, unknown>): Promise<Solution> {
    return this.solutions.create(problemId, stringField(body, 'title', 200), stringField(body, 'content', 20_000));
  }
}
