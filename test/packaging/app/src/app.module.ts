import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CounterExceptionFilter, CounterLedgerEntry, CounterModule } from 'nestjs-counter';
import { Article } from './article.entity.js';
import { ArticlesController } from './articles.controller.js';

@Module({
  imports: [
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      schema: process.env.DATABASE_SCHEMA, // each run of the test has a schema of its own
      entities: [Article, CounterLedgerEntry],
      synchronize: true,
    }),
    TypeOrmModule.forFeature([Article]),
    ScheduleModule.forRoot(),
    // The test flushes through POST /articles/flush; the timer would race its reads of the table.
    CounterModule.forRoot({ redis: process.env.REDIS_URL, keyPrefix: process.env.KEY_PREFIX, flushEnabled: false }),
  ],
  controllers: [ArticlesController],
  providers: [{ provide: APP_FILTER, useClass: CounterExceptionFilter }],
})
export class AppModule {}
