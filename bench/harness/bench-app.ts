import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions, type Logger as TypeOrmLogger } from 'typeorm';
import {
  CounterInterceptor,
  CounterLedgerEntry,
  CounterModule,
  CounterService,
  type CounterModuleOptions,
} from '../../lib/index.js';
import { BENCH_ENTITIES, BenchPost, type BenchEntity } from '../../test/fixtures/entities.js';
import { redisOption, type Topology } from './redis-targets.js';

export interface BenchApp {
  app: INestApplicationContext;
  counters: CounterService;
  interceptor: CounterInterceptor;
  dataSource: DataSource;
  close(): Promise<void>;
}

export interface BenchAppOptions {
  database: DataSourceOptions;
  topology: Topology;
  keyPrefix: string;
  /** Module options beyond redis and keyPrefix; the library's defaults otherwise (flushing included). */
  counter?: CounterModuleOptions;
  /** A TypeORM logger that sees every statement (to count them). */
  logger?: TypeOrmLogger;
  /** Create the tables. @default true */
  synchronize?: boolean;
  /** The entities instead of the bench's own. */
  entities?: Array<new () => unknown>;
}

@Module({})
class BenchAppModule {}

/** An application context built as a user's app is: TypeORM, the scheduler, the counter module. */
export async function startBenchApp(options: BenchAppOptions): Promise<BenchApp> {
  const app = await NestFactory.createApplicationContext(
    {
      module: BenchAppModule,
      imports: [
        TypeOrmModule.forRoot({
          ...options.database,
          entities: [...(options.entities ?? BENCH_ENTITIES), CounterLedgerEntry],
          synchronize: options.synchronize ?? true,
          ...(options.logger ? { logging: ['query', 'error'], logger: options.logger } : { logging: false }),
        } as DataSourceOptions),
        ScheduleModule.forRoot(),
        CounterModule.forRoot({
          redis: redisOption(options.topology),
          keyPrefix: options.keyPrefix,
          ...options.counter,
        }),
      ],
    },
    { logger: ['error', 'warn'] },
  );
  await app.init();
  return {
    app,
    counters: app.get(CounterService),
    interceptor: app.get(CounterInterceptor),
    dataSource: app.get(DataSource),
    close: () => app.close(),
  };
}

/** Inserts rows with ids 1..count (counters at 0), in chunks the drivers accept. */
export async function insertRows(
  dataSource: DataSource,
  entity: BenchEntity,
  count: number,
  chunk = 1_000,
): Promise<void> {
  for (let start = 1; start <= count; start += chunk) {
    const rows = Array.from({ length: Math.min(chunk, count - start + 1) }, (_, i) => ({ id: start + i }));
    // updateEntity(false): TypeORM would read the rows back with one OR per row, too deep for SQLite.
    await dataSource.createQueryBuilder().insert().into(entity).values(rows).updateEntity(false).execute();
  }
}

/** Loads rows 1..count into Redis (one `getMany` per chunk): what reads do before increments. */
export async function loadIntoRedis(counters: CounterService, entity: BenchEntity, count: number, chunk = 1_000) {
  for (let start = 1; start <= count; start += chunk) {
    const ids = Array.from({ length: Math.min(chunk, count - start + 1) }, (_, i) => start + i);
    const values = await counters.getMany(entity, ids);
    if (values.size !== ids.length)
      throw new Error(`loaded ${values.size} of ${ids.length} ${entity.name} rows into Redis`);
  }
}

/**
 * Realistic counters in the database, different per row (likes up to 5,000, views up to 5 million,
 * comments up to 300), so that a wrong or missing overlay cannot go unnoticed.
 */
export async function giveCountersValues(dataSource: DataSource): Promise<void> {
  await dataSource
    .createQueryBuilder()
    .update(BenchPost)
    .set({
      likeCount: () => '(id * 37) % 5000',
      viewCount: () => '(id * 7919) % 5000000',
      commentCount: () => '(id * 13) % 300',
    })
    .where('id >= :first', { first: 1 })
    .execute();
}
