import { Controller, Delete, HttpCode, Param, ParseIntPipe, Post } from '@nestjs/common';
import { CounterService } from 'nestjs-counter';
import { Solution } from './solution.entity.js';

/** Likes of a solution: 404 for a missing solution, 409 when unliking below zero. */
@Controller('solutions/:id/like')
export class SolutionLikesController {
  constructor(private readonly counters: CounterService) {}

  @Post()
  @HttpCode(200)
  async like(@Param('id', ParseIntPipe) id: number) {
    return { id, like_count: await this.counters.increment(Solution, id, 'like_count') };
  }

  @Delete()
  async unlike(@Param('id', ParseIntPipe) id: number) {
    return { id, like_count: await this.counters.decrement(Solution, id, 'like_count') };
  }
}
