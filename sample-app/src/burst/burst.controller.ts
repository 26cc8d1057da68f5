import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { optionalPositiveIntegerField } from '../common/body-field.validator.js';
import { BurstRunner } from './burst.runner.js';
import type { BurstTally } from './burst.tally.js';

@Controller('bursts')
export class BurstController {
  constructor(private readonly runner: BurstRunner) {}

  /** POST /bursts `{ "solutionId": 1 }`: starts a burst of 1,000 changes from 50 visitors (202); 409 while one sends. */
  @Post()
  @HttpCode(202)
  start(@Body() body: Record<string, unknown>): Promise<BurstTally> {
    return this.runner.start(optionalPositiveIntegerField(body, 'solutionId') ?? 1);
  }

  /** GET /bursts/latest: the last burst's tally so far, or `{ "burst": null }` before the first. */
  @Get('latest')
  latest(): { burst: BurstTally | null } {
    return { burst: this.runner.latest() };
  }
}
