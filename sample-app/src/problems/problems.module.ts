import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ProblemSubmissionsController } from './problem-submissions.controller.js';
import { Problem } from './problem.entity.js';
import { Submission } from './submission.entity.js';
import { ProblemsController } from './problems.controller.js';
import { ProblemsService } from './problems.service.js';
import { SubmissionsService } from './submissions.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([Problem, Submission])],
  controllers: [ProblemsController, ProblemSubmissionsController],
  providers: [ProblemsService, SubmissionsService],
})
export class ProblemsModule {}
