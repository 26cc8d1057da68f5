import { Controller, Get } from '@nestjs/common';
import { SignedInUser } from '../users/signed-in-user.decorator.js';
import type { LikeTarget } from './like.entity.js';
import { LikesService } from './likes.service.js';

@Controller('likes')
export class UserLikesController {
  constructor(private readonly likes: LikesService) {}

  /** GET /likes with `X-User-Id`: `{ "solution": [ids], "comment": [ids] }` the signed-in user likes. */
  @Get()
  mine(@SignedInUser() userId: number): Promise<Record<LikeTarget, number[]>> {
    return this.likes.likedBy(userId);
  }
}
