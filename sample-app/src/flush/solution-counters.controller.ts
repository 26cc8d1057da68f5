import { Controller, Get, NotFoundException, Param, ParseIntPipe } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { CounterService } from 'nestjs-counter';
import type { Repository } from 'typeorm';
import { Solution } from '../solutions/solution.entity.js';

/** A counter's live value (Redis), its value in SQL, and the changes between them not yet flushed. */
export interface CounterValues {
  live: number;
  sql: number;
  pending: number;
}

export interface SolutionCounters {
  id: number;
  title: string;
  counters: Record<'like_count' | 'view_count' | 'comment_count', CounterValues>;
}

const COUNTERS = [
  ['like_count', 'likeCount'],
  ['view_count', 'viewCount'],
  ['comment_count', 'commentCount'],
] as const;

@Controller('solutions/:id/counters')
export class SolutionCountersController {
  constructor(
    private readonly counters: CounterService,
    @InjectRepository(Solution) private readonly solutions: Repository<Solution>,
  ) {}

  /**
   * GET /solutions/:id/counters: each counter live and in SQL, counting no view. SQL is read first: a
   * flush that lands between the two reads then shows as pending still, never as SQL ahead of live.
   */
  @Get()
  async get(@Param('id', ParseIntPipe) id: number): Promise<SolutionCounters> {
    const row = await this.solutions.findOne({
      where: { id },
      select: { id: true, title: true, likeCount: true, viewCount: true, commentCount: true },
    });
    if (!row) throw new NotFoundException(`Solution ${id} does not exist.`);
    const live = (await this.counters.getMany(Solution, [id])).get(id);
    if (!live) throw new NotFoundException(`Solution ${id} does not exist.`);
    const values = COUNTERS.map(([counter, property]) => {
      const sql = Number(row[property]);
      return [counter, { live: live[counter], sql, pending: live[counter] - sql }] as const;
    });
    return { id, title: row.title, counters: Object.fromEntries(values) as SolutionCounters['counters'] };
  }
}
