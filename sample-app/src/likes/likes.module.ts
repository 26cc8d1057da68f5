import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { User } from '../users/user.entity.js';
import { Like } from './like.entity.js';
import { LikesService } from './likes.service.js';
import { UserLikesController } from './user-likes.controller.js';

@Module({
  imports: [TypeOrmModule.forFeature([Like, User])],
  controllers: [UserLikesController],
  providers: [LikesService],
  exports: [LikesService],
})
export class LikesModule {}
