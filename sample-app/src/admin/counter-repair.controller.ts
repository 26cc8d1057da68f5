import { Body, Controller, NotFoundException, Param, Post, UseGuards } from '@nestjs/common';
import { CounterService, type AuditReport, type EntityClass, type RecountReport } from 'nestjs-counter';
import { Comment } from '../comments/comment.entity.js';
import { optionalPositiveIntegerField } from '../common/body-field.validator.js';
import { Problem } from '../problems/problem.entity.js';
import { Solution } from '../solutions/solution.entity.js';
import { AdminTokenGuard } from './admin-token.guard.js';

/** The counted entities by the name the routes take. */
const ENTITIES: Record<string, EntityClass> = { problems: Problem, solutions: Solution, comments: Comment };

/**
 * Checks counters against their sources and repairs them: what an operator runs after a Redis outage
 * or a crash between a row's insert and its count. Both walk tables, so both are POSTs (which the
 * same-origin guard covers: no other site's page can start one) and need the operator's ADMIN_TOKEN.
 */
@Controller('admin/counters')
@UseGuards(AdminTokenGuard)
export class CounterRepairController {
  constructor(private readonly counters: CounterService) {}

  /** POST /admin/counters/solutions/like_count/audit `{ "sample": 100 }` (all rows without `sample`) */
  @Post(':entity/:counter/audit')
  audit(
    @Param('entity') entity: string,
    @Param('counter') counter: string,
    @Body() body: Record<string, unknown> | undefined,
  ): Promise<AuditReport> {
    const sample = optionalPositiveIntegerField(body, 'sample');
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
