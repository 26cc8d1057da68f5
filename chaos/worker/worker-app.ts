// The application a chaos worker runs, built as a user would build theirs (README, "Quick start"): TypeORM,
// the scheduler, the counter module, and shutdown hooks so that SIGTERM runs the final flush.
import { Module, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { DataSourceOptions } from 'typeorm';
import { CounterBucket, CounterLedgerEntry, CounterModule } from '../../lib/index.js';
import { ENTITIES } from '../../test/fixtures/entities.js';
import { SOURCED_ENTITIES } from '../../test/fixtures/sourced-entities.js';
import { Clip } from './clip.entity.js';
import type { WorkerConfig } from './worker-protocol.js';

@Module({})
class ChaosWorkerModule {
  static register(config: WorkerConfig): DynamicModule {
    return {
      module: ChaosWorkerModule,
      imports: [
        TypeOrmModule.forRoot({
          ...config.database,
          entities: [
            ...ENTITIES,
            ...SOURCED_ENTITIES,
            CounterLedgerEntry,
            ...(config.windowed ? [Clip, CounterBucket] : []),
          ],
          // The parent creates the tables once; instances of one deployment never race to do it.
          synchronize: false,
          logging: false,
        } as DataSourceOptions),
        ScheduleModule.forRoot(),
        CounterModule.forRoot(config.counter),
      ],
    };
  }
}

/**
 * A standalone application context: the counter module needs no HTTP server, and the parent talks to
 * the worker over IPC instead.
 */
export async function createWorkerApp(config: WorkerConfig): Promise<INestApplicationContext> {
  const app = await NestFactory.createApplicationContext(ChaosWorkerModule.register(config), {
    logger: config.logLevels ?? ['error', 'warn'],
  });
  app.enableShutdownHooks();
  return app;
}
