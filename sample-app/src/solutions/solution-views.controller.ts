import { Controller, Get, Param, ParseIntPipe } from '@nestjs/common';
import type { CounterBucketValue } from 'nestjs-counter';
import { SolutionsService } from './solutions.service.js';

/** A solution's views over time, from its windowed `view_count`; reading them counts no view. */
@Controller('solutions/:id/views')
export class SolutionViewsController {
  constructor(private readonly solutions: SolutionsService) {}

  /** GET /solutions/:id/views/hourly: `[{ start, value }]`, the last 24 hours (UTC), live; 404 for a missing solution. */
  @Get('hourly')
  hourly(@Param('id', ParseIntPipe) id: number): Promise<CounterBucketValue[]> {
    return this.solutions.viewsPerHour(id);
  }
}
