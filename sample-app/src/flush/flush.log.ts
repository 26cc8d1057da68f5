import { Injectable } from '@nestjs/common';
import type { FlushReport } from 'nestjs-counter';

/** One flush that wrote rows, as the page's log shows it. */
export interface FlushEntry {
  /** When it ended (ISO 8601). */
  at: string;
  rows: number;
  batches: number;
  durationMs: number;
  /** SQL statements its transactions issued (see SqlStatementCounter). */
  statements: number;
}

/** What the flushes wrote since the app started. */
export interface FlushTotals {
  flushes: number;
  rows: number;
  batches: number;
}

/** Entries the log keeps. */
const KEPT = 20;

/**
 * The flushes the app ran (FlushLoop): the last ones that wrote rows, newest first, and running totals
 * that the timeline and a burst's tally take differences of.
 */
@Injectable()
export class FlushLog {
  private readonly entries: FlushEntry[] = [];
  private readonly totals: FlushTotals = { flushes: 0, rows: 0, batches: 0 };

  record(report: FlushReport, statements: number): void {
    this.totals.flushes++;
    this.totals.rows += report.rows;
    this.totals.batches += report.batches;
    if (report.rows === 0) return;
    const { rows, batches, durationMs } = report;
    this.entries.unshift({ at: new Date().toISOString(), rows, batches, durationMs, statements });
    this.entries.length = Math.min(this.entries.length, KEPT);
  }

  recent(): FlushEntry[] {
    return [...this.entries];
  }

  read(): FlushTotals {
    return { ...this.totals };
  }
}
