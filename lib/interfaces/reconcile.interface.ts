/** Options of `CounterService.recount()`. */
export interface RecountOptions {
  /** The rows to recount. @default every row of the table, walked in primary key order */
  ids?: ReadonlyArray<string | number>;
  /** Rows read from the source and set per step. @default 1000 */
  batchSize?: number;
  /** Resume a walk of the table after this id (the `cursor` a report or the log gave). */
  after?: string | number;
  /** Stop the walk after this many rows; the report's `cursor` says where to resume. @default no limit */
  limit?: number;
}

/** A row whose counter a recount corrected. */
export interface RecountCorrection {
  id: string | number;
  /** The live value it found. */
  was: number;
  /** The source's value, which the counter was set to. */
  now: number;
}

/** What `CounterService.recount()` did. */
export interface RecountReport {
  /** Rows compared with the source (rows missing from the database are not). */
  checked: number;
  corrected: RecountCorrection[];
  /** Rows whose live value kept changing while they were compared (three times): recount them again. */
  skipped: Array<string | number>;
  /** Where a walk stopped at `limit`, to pass as `after`; null when it reached the end (or ids were given). */
  cursor: string | number | null;
}

/** Options of `CounterService.audit()`: the rows to compare, by default the whole table. */
export interface AuditOptions {
  /** These rows. */
  ids?: ReadonlyArray<string | number>;
  /** This many rows picked at random. */
  sample?: number;
  /** Rows read per step of a walk of the table. @default 1000 */
  batchSize?: number;
}

/** A row whose live value differs from its source. */
export interface CounterDrift {
  id: string | number;
  live: number;
  source: number;
}

/** What `CounterService.audit()` found; it changes nothing. */
export interface AuditReport {
  checked: number;
  drifted: CounterDrift[];
}
