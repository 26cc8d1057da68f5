import { Body, Controller, Param, ParseIntPipe, Post } from '@nestjs/common';
import { LiveCounts } from 'nestjs-counter';
import { optionalPositiveIntegerField, stringField } from '../common/body-field.validator.js';
import { OptionalSignedInUser } from '../users/signed-in-user.decorator.js';
import { Comment } from './comment.entity.js';
import { CommentsService } from './comments.service.js';

@Controller('solutions/:id/comments')
export class SolutionCommentsController {
  constructor(private readonly comments: CommentsService) {}

  /**
   * POST /solutions/:id/comments `{ "content": "…", "parentId": 3 }` (parentId optional: a reply); with
   * `X-User-Id`, that user is its author (401 for an unknown one).
   */
  @Post()
  @LiveCounts()
  create(
    @Param('id', ParseIntPipe) solutionId: number,
    @Body() body: Record<string, unknown>,
    @OptionalSignedInUser() authorId: number | undefined,
  ): Promise<Comment> {
    return this.comments.create(
      solutionId,
      stringField(body, 'content', 5_000),
      optionalPositiveIntegerField(body, 'parentId'),
      authorId,
    );
  }
}
