import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Solution } from '../solutions/solution.entity.js';
import { CounterMetricsModule } from './counter-metrics.module.js';
import { FlushController } from './flush.controller.js';
import { FlushLog } from './flush.log.js';
import { FlushLoop } from './flush.loop.js';
import { FlushTimeline } from './flush.timeline.js';
import { SolutionCountersController } from './solution-counters.controller.js';
import { SqlStatementCounter } from './sql-statement.counter.js';

/** The app's scheduled flush, what it wrote and sent to SQL, and the live and SQL values side by side. */
@Module({
  imports: [CounterMetricsModule, TypeOrmModule.forFeature([Solution])],
  controllers: [FlushController, SolutionCountersController],
  providers: [FlushLoop, FlushLog, FlushTimeline, SqlStatementCounter],
  exports: [FlushLoop, FlushLog, SqlStatementCounter],
})
export class FlushModule {}
