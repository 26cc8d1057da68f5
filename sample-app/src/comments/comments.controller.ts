import { Controller, Get, ParseIntPipe, Query } from '@nestjs/common';
import { LiveCounts } from 'nestjs-counter';
import type { Page, PageRequest } from '../common/page.interface.js';
import { Pagination } from '../common/pagination.decorator.js';
import { Comment } from './comment.entity.js';
import { CommentsService } from './comments.service.js';

@Controller('comments')
@LiveCounts()
export class CommentsController {
  constructor(private readonly comments: CommentsService) {}

  /** GET /comments?page=&size=[&solutionId=] */
  @Get()
  list(
    @Pagination() page: PageRequest,
    @Query('solutionId', new ParseIntPipe({ optional: true })) solutionId?: number,
  ): Promise<Page<Comment>> {
    return this.comments.list(page, solutionId);
  }
}
