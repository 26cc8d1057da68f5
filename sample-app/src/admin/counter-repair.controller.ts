import { Body, Controller, Get, NotFoundException, Param, ParseIntPipe, Post, Query } from '@nestjs/common';
import { CounterService, type AuditReport, type EntityClass, type RecountReport } from 'nestjs-counter';
import { Comment } from '../comments/comment.entity.js';
import { Problem } from '../problems/problem.entity.js';
import { Solution } from '../solutions/solution.entity.js';

/** The counted entities by the name the routes take. */
const ENTITIES: Record<string, EntityClass> = { problems: Problem, solutions: Solution, comments: Comment };

/**
 * Checks counters against their sources and repairs them: what an operator runs after a Redis outage
 * or a crash between a row's insert and its count (no sign-in in this demo).
 */
@Controller('admin/counters')
export class CounterRepairController {
  constructor(private readonly counters: CounterService) {}

  /** GET /admin/counters/solutions/like_count/audit?sample=100 (all rows without `sample`) */
  @Get(':entity/:counter/audit')
  audit(
    @Param('entity') entity: string,
    @Param('counter') counter: string,
    @Query('sample', new ParseIntPipe({ optional: true })) sample?: number,
  ): Promise<AuditReport> {
    return this.counters.audit(entityNamed(entity), counter, { sample });
  }

  /** POST /admin/counters/solutions/like_count/recount `{ "ids": [1, 2] }` (all rows without `ids`) */
  @Post(':entity/:counter/recount')
  recount(
    @Param('entity') entity: string,
    @Param('counter') counter: string,
    @Body() body: { ids?: number[] } = {},
  ): Promise<RecountReport> {
    return this.counters.recount(entityNamed(entity), counter, { ids: body?.ids });
  }
}

function entityNamed(name: string): EntityClass {
  const entity = ENTITIES[name];
  if (!entity) throw new NotFoundException(`No counted entity "${name}": use ${Object.keys(ENTITIES).join(', ')}.`);
  return entity;
}
