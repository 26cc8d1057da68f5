import { Module } from '@nestjs/common';
import { CounterStatusController } from './counter-status.controller.js';

@Module({ controllers: [CounterStatusController] })
export class HealthModule {}
