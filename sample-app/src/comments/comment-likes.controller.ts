import { Controller, Delete, HttpCode, Param, ParseIntPipe, Post } from '@nestjs/common';
import { LikesService, type LikeResult } from '../likes/likes.service.js';
import { SignedInUser } from '../users/signed-in-user.decorator.js';

/** The signed-in user's like of a comment: 401 without a known `X-User-Id`, 404 for a missing comment. */
@Controller('comments/:id/like')
export class CommentLikesController {
  constructor(private readonly likes: LikesService) {}

  @Post()
  @HttpCode(200)
  like(@SignedInUser() userId: number, @Param('id', ParseIntPipe) id: number): Promise<LikeResult> {
    return this.likes.like(userId, 'comment', id);
  }

  @Delete()
  unlike(@SignedInUser() userId: number, @Param('id', ParseIntPipe) id: number): Promise<LikeResult> {
    return this.likes.unlike(userId, 'comment', id);
  }
}
