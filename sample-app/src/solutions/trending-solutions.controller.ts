import { Controller, Get } from '@nestjs/common';
import { SolutionsService, type TrendingSolution } from './solutions.service.js';

/** The solutions liked most lately, from the rolling window `like_count` keeps. */
@Controller('solutions/trending')
export class TrendingSolutionsController {
  constructor(private readonly solutions: SolutionsService) {}

  /** GET /solutions/trending: `[{ id, title, likes }]`, the 5 liked most in the last 24 hours, live. */
  @Get()
  trending(): Promise<TrendingSolution[]> {
    return this.solutions.trending();
  }
}
