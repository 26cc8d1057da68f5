import { Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AdminModule } from './admin/admin.module.js';
import { BurstModule } from './burst/burst.module.js';
import { CommentsModule } from './comments/comments.module.js';
import { CounterExceptionFilter, CounterModule } from 'nestjs-counter';
import { SameOriginGuard } from './common/same-origin.guard.js';
import { counterOptions } from './config/counter-options.factory.js';
import { databaseOptions } from './config/database-options.factory.js';
import { DemoModule } from './demo/demo.module.js';
import { CounterMetrics } from './flush/counter.metrics.js';
import { CounterMetricsModule } from './flush/counter-metrics.module.js';
import { FlushModule } from './flush/flush.module.js';
import { HealthModule } from './health/health.module.js';
import { IndexController } from './index.controller.js';
import { PageModule } from './page/page.module.js';
import { ProblemsModule } from './problems/problems.module.js';
import { SolutionsModule } from './solutions/solutions.module.js';
import { UsersModule } from './users/users.module.js';

@Module({
  imports: [
    // Configuration comes from the environment only: DATABASE_URL, REDIS_URL, PORT, COUNTER_KEY_PREFIX,
    // ADMIN_TOKEN (the admin routes' bearer token; without it they answer 404).
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true }),
    TypeOrmModule.forRootAsync({ inject: [ConfigService], useFactory: databaseOptions }),
    ScheduleModule.forRoot(), // runs the app's flush every second (flush/flush.loop.ts)
    CounterModule.forRootAsync({
      imports: [CounterMetricsModule],
      inject: [ConfigService, CounterMetrics],
      useFactory: counterOptions,
    }),
    ProblemsModule,
    SolutionsModule,
    CommentsModule,
    UsersModule,
    PageModule,
    FlushModule,
    BurstModule,
    DemoModule,
    HealthModule,
    AdminModule,
  ],
  controllers: [IndexController],
  providers: [
    { provide: APP_FILTER, useClass: CounterExceptionFilter },
    { provide: APP_GUARD, useClass: SameOriginGuard },
  ],
})
export class AppModule implements OnApplicationShutdown {
  // Called after the modules it imports have shut down: the counter module's final flush is done.
  onApplicationShutdown(signal?: string): void {
    Logger.log(`Online judge stopped${signal ? ` on ${signal}` : ''}`, 'Main');
  }
}
