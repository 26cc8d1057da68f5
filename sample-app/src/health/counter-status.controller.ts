import { Controller, Get } from '@nestjs/common';
import { CounterService, type CounterStatus } from 'nestjs-counter';

/** The counter backlog and this instance's flushing, for dashboards and alerts. */
@Controller('health/counters')
export class CounterStatusController {
  constructor(private readonly counters: CounterService) {}

  @Get()
  status(): Promise<CounterStatus> {
    return this.counters.status();
  }
}
