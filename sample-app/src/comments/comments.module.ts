import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LikesModule } from '../likes/likes.module.js';
import { Solution } from '../solutions/solution.entity.js';
import { CommentLikesController } from './comment-likes.controller.js';
import { Comment } from './comment.entity.js';
import { CommentsController } from './comments.controller.js';
import { CommentsService } from './comments.service.js';
import { SolutionCommentsController } from './solution-comments.controller.js';
import { User } from '../users/user.entity.js';

@Module({
  imports: [TypeOrmModule.forFeature([Comment, Solution, User]), LikesModule],
  controllers: [CommentsController, SolutionCommentsController, CommentLikesController],
  providers: [CommentsService],
})
export class CommentsModule {}
