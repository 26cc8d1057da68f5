import { Controller, Delete, HttpCode, Param, ParseIntPipe, Post } from '@nestjs/common';
import { CounterService } from 'nestjs-counter';
import { Comment } from './comment.entity.js';

/** Likes of a comment: 404 for a missing comment, 409 when unliking below zero. */
@Controller('comments/:id/like')
export class CommentLikesController {
  constructor(private readonly counters: CounterService) {}

  @Post()
  @HttpCode(200)
  async like(@Param('id', ParseIntPipe) id: number) {
    return { id, like_count: await this.counters.increment(Comment, id, 'like_count') };
  }

  @Delete()
  async unlike(@Param('id', ParseIntPipe) id: number) {
    return { id, like_count: await this.counters.decrement(Comment, id, 'like_count') };
  }
}
