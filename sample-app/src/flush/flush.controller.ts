import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { FlushLog, type FlushEntry } from './flush.log.js';
import { FLUSH_INTERVAL_MS, FlushLoop } from './flush.loop.js';
import { FlushTimeline, type FlushSample } from './flush.timeline.js';

export interface FlushView {
  paused: boolean;
  intervalMs: number;
  /** The last minute, a sample a second, oldest first. */
  timeline: FlushSample[];
  /** The last flushes that wrote rows, newest first. */
  log: FlushEntry[];
}

/** What a flush run from the page did; a failure by whether it happened, never the database's message. */
export interface FlushNowResult {
  rows: number;
  batches: number;
  durationMs: number;
  failed: boolean;
}

@Controller('flush')
export class FlushController {
  constructor(
    private readonly loop: FlushLoop,
    private readonly log: FlushLog,
    private readonly timeline: FlushTimeline,
  ) {}

  /** GET /flush: the page's chart and flush log, and whether the scheduled flush is paused. */
  @Get()
  get(): FlushView {
    return {
      paused: this.loop.isPaused,
      intervalMs: FLUSH_INTERVAL_MS,
      timeline: this.timeline.recent(),
      log: this.log.recent(),
    };
  }

  /** POST /flush/pause: no scheduled flush until resumed; changes wait in Redis. */
  @Post('pause')
  @HttpCode(200)
  pause(): { paused: boolean } {
    this.loop.pause();
    return { paused: true };
  }

  @Post('resume')
  @HttpCode(200)
  resume(): { paused: boolean } {
    this.loop.resume();
    return { paused: false };
  }

  /** POST /flush/now: flushes at once, paused or not. */
  @Post('now')
  @HttpCode(200)
  async now(): Promise<FlushNowResult> {
    const { rows, batches, durationMs, error } = await this.loop.flushNow();
    return { rows, batches, durationMs, failed: error !== undefined };
  }
}
