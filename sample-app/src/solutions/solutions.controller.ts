import { Controller, Get, Param, ParseIntPipe, Query } from '@nestjs/common';
import { LiveCounts } from 'nestjs-counter';
import type { Page, PageRequest } from '../common/page.interface.js';
import { Pagination } from '../common/pagination.decorator.js';
import { Solution } from './solution.entity.js';
import { SolutionsService } from './solutions.service.js';

@Controller('solutions')
@LiveCounts()
export class SolutionsController {
  constructor(private readonly solutions: SolutionsService) {}

  /** GET /solutions?page=&size=[&problemId=] */
  @Get()
  list(
    @Pagination() page: PageRequest,
    @Query('problemId', new ParseIntPipe({ optional: true })) problemId?: number,
  ): Promise<Page<Solution>> {
    return this.solutions.list(page, problemId);
  }

  /** GET /solutions/:id counts a view and returns the solution. */
  @Get(':id')
  view(@Param('id', ParseIntPipe) id: number): Promise<Solution> {
    return this.solutions.view(id);
  }
}
