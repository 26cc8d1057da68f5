import { Module } from '@nestjs/common';
import { CounterRepairController } from './counter-repair.controller.js';

@Module({ controllers: [CounterRepairController] })
export class AdminModule {}
