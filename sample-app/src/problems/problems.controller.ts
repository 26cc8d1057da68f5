import { Controller, Get, Param, ParseIntPipe } from '@nestjs/common';
import { LiveCounts } from 'nestjs-counter';
import type { Page, PageRequest } from '../common/page.interface.js';
import { Pagination } from '../common/pagination.decorator.js';
import { Problem } from './problem.entity.js';
import { ProblemsService } from './problems.service.js';

@Controller('problems')
@LiveCounts()
export class ProblemsController {
  constructor(private readonly problems: ProblemsService) {}

  /** GET /problems?page=&size= */
  @Get()
  list(@Pagination() page: PageRequest): Promise<Page<Problem>> {
    return this.problems.list(page);
  }

  /** GET /problems/:id, with its solutions. */
  @Get(':id')
  findOne(@Param('id', ParseIntPipe) id: number): Promise<Problem> {
    return this.problems.findWithSolutions(id);
  }
}
