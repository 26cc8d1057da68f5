import { Module } from '@nestjs/common';
import { DemoDataSeeder } from './demo-data.seeder.js';
import { StaleCountersCleaner } from './stale-counters.cleaner.js';

@Module({ providers: [DemoDataSeeder, StaleCountersCleaner] })
export class DemoModule {}
