import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { CounterService } from 'nestjs-counter';
import { CounterMetrics } from './counter.metrics.js';
import { FlushLog } from './flush.log.js';

/** One second of the page's chart. */
export interface FlushSample {
  /** The end of the second (ISO 8601). */
  at: string;
  /** Counter changes applied in it (the module's `changes_total` metric). */
  changes: number;
  /** Rows the flushes that ended in it wrote. */
  rowsFlushed: number;
  /** Rows waiting in Redis at its end (`status().pendingRows`; null with Redis down). */
  pendingRows: number | null;
}

/** Seconds the chart shows. */
const SECONDS_KEPT = 60;

/** Samples the flush once a second, paused or not, so that a backlog can be watched building. */
@Injectable()
export class FlushTimeline {
  private readonly samples: FlushSample[] = [];
  private last?: { changes: number; rows: number };
  private sampling = false;

  constructor(
    private readonly counters: CounterService,
    private readonly metrics: CounterMetrics,
    private readonly log: FlushLog,
  ) {}

  /** The last minute, oldest first. */
  recent(): FlushSample[] {
    return [...this.samples];
  }

  @Interval(1_000)
  async sample(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    try {
      await this.sampleNow();
    } finally {
      this.sampling = false;
    }
  }

  private async sampleNow(): Promise<void> {
    const changes = await this.metrics.changesApplied();
    const { rows } = this.log.read();
    const { pendingRows } = await this.counters.status();
    if (this.last) {
      const at = new Date().toISOString();
      this.samples.push({ at, changes: changes - this.last.changes, rowsFlushed: rows - this.last.rows, pendingRows });
      if (this.samples.length > SECONDS_KEPT) this.samples.shift();
    }
    this.last = { changes, rows };
  }
}
