import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FlushModule } from '../flush/flush.module.js';
import { Like } from '../likes/like.entity.js';
import { Solution } from '../solutions/solution.entity.js';
import { User } from '../users/user.entity.js';
import { BurstVisitors } from './burst-visitors.js';
import { BurstController } from './burst.controller.js';
import { BurstRunner } from './burst.runner.js';
import { OwnRoutesClient } from './own-routes.client.js';

/** The page's "simulate a burst": many visitors' changes at once, and what they cost in SQL. */
@Module({
  imports: [TypeOrmModule.forFeature([Solution, Like, User]), FlushModule],
  controllers: [BurstController],
  providers: [BurstRunner, BurstVisitors, OwnRoutesClient],
})
export class BurstModule {}
