import { Controller, Delete, HttpCode, Param, ParseIntPipe, Post } from '@nestjs/common';
import { LikesService, type LikeResult } from '../likes/likes.service.js';
import { SignedInUser } from '../users/signed-in-user.decorator.js';

/** The signed-in user's like of a solution: 401 without a known `X-User-Id`, 404 for a missing solution. */
@Controller('solutions/:id/like')
export class SolutionLikesController {
  constructor(private readonly likes: LikesService) {}

  @Post()
  @HttpCode(200)
  like(@SignedInUser() userId: number, @Param('id', ParseIntPipe) id: number): Promise<LikeResult> {
    return this.likes.like(userId, 'solution', id);
  }

  @Delete()
  unlike(@SignedInUser() userId: number, @Param('id', ParseIntPipe) id: number): Promise<LikeResult> {
    return this.likes.unlike(userId, 'solution', id);
  }
}
