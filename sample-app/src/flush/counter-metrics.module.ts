import { Module } from '@nestjs/common';
import { CounterMetrics } from './counter.metrics.js';

/** Imported by the counter module's options factory and by the flush module: one registry for both. */
@Module({ providers: [CounterMetrics], exports: [CounterMetrics] })
export class CounterMetricsModule {}
