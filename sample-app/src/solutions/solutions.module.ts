import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LikesModule } from '../likes/likes.module.js';
import { Problem } from '../problems/problem.entity.js';
import { ProblemSolutionsController } from './problem-solutions.controller.js';
import { SolutionLikesController } from './solution-likes.controller.js';
import { SolutionViewsController } from './solution-views.controller.js';
import { Solution } from './solution.entity.js';
import { SolutionsController } from './solutions.controller.js';
import { SolutionsService } from './solutions.service.js';
import { TrendingSolutionsController } from './trending-solutions.controller.js';

@Module({
  imports: [TypeOrmModule.forFeature([Solution, Problem]), LikesModule],
  // Trending first: its route would otherwise be taken by SolutionsController's GET /solutions/:id.
  controllers: [
    TrendingSolutionsController,
    SolutionsController,
    ProblemSolutionsController,
    SolutionLikesController,
    SolutionViewsController,
  ],
  providers: [SolutionsService],
})
export class SolutionsModule {}
