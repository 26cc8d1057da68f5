import { Body, Controller, Param, ParseIntPipe, Post } from '@nestjs/common';
import { booleanField } from '../common/body-field.validator.js';
import { SubmissionsService, type SubmissionResult } from './submissions.service.js';

@Controller('problems/:id/submissions')
export class ProblemSubmissionsController {
  constructor(private readonly submissions: SubmissionsService) {}

  /** POST /problems/:id/submissions `{ "passed": true }` */
  @Post()
  submit(@Param('id', ParseIntPipe) id: number, @Body() body: Record<string, unknown>): Promise<SubmissionResult> {
    return this.submissions.submit(id, booleanField(body, 'passed'));
  }
}
