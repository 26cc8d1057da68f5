import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions } from 'typeorm';
import {
  CounterBucket,
  CounterLedgerEntry,
  CounterModule,
  CounterService,
  type CounterModuleOptions,
} from '../../lib/index.js';
import { ENTITIES } from '../fixtures/entities.js';
import type { AnyRedis } from '../../support/redis.js';
import { counterRedisOption, type Topology } from './topologies.js';

export interface CounterApp {
  app: INestApplication;
  counters: CounterService;
  dataSource: DataSource;
  close(): Promise<void>;
}

export interface CounterAppOptions {
  database: DataSourceOptions;
  keyPrefix: string;
  /** Create the tables (the first app of a group). */
  synchronize?: boolean;
  counter?: CounterModuleOptions;
  /** The Redis the module connects to (it creates the client) unless `redis` is given. @default 'standalone' */
  topology?: Topology;
  /** A client the test made and hands to the module (which then never closes it). */
  redis?: AnyRedis;
  controllers?: Array<new (...args: never[]) => unknown>;
  /** More modules the app imports (e.g. TerminusModule). */
  imports?: ModuleMetadata['imports'];
  /** The entities instead of ENTITIES (e.g. an older version of one, as a deployment before a change). */
  entities?: Array<new () => unknown>;
}

/** A Nest application as a user would build it: TypeORM, the scheduler and the counter module. */
export async function startCounterApp(options: CounterAppOptions): Promise<CounterApp> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({
        ...options.database,
        entities: [...(options.entities ?? ENTITIES), CounterLedgerEntry, CounterBucket],
        synchronize: options.synchronize ?? true,
        logging: false,
      }),
      ScheduleModule.forRoot(),
      CounterModule.forRoot({
        redis: options.redis ?? counterRedisOption(options.topology ?? 'standalone'),
        keyPrefix: options.keyPrefix,
        shards: 8,
        flushEnabled: false,
        ...options.counter,
      }),
      ...(options.imports ?? []),
    ],
    controllers: options.controllers ?? [],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: ['error'] });
  await app.init();
  return {
    app,
    counters: app.get(CounterService),
    dataSource: app.get(DataSource),
    close: () => app.close(),
  };
}
