/**
 * Options of `CounterService.recount()`. Each is validated before anything is read: a number that is not
 * a positive safe integer, `ids` that are not an array, or an `after` that is not an id is refused
 * (InvalidCounterOptionError), and each id is validated as `increment` validates it (InvalidCounterIdError).
 */
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

/** A row whose source value its counter cannot take: left as it was. */
export interface RecountRefusal {
  id: string | number;
  /** What the source gave: a number, or the text of a value that is not one. */
  source: number | string;
  /**
   * 'out-of-range': outside the counter's `@Counted()` bounds (or further from the live value than a
   * safe integer); 'not-a-safe-integer': not an integer within ±(2^53-1). Fix the source or the bounds.
   */
  reason: 'out-of-range' | 'not-a-safe-integer';
}

/** What `CounterService.recount()` did. */
export interface RecountReport {
  /** Rows compared with the source (rows missing from the database are not). */
  checked: number;
  corrected: RecountCorrection[];
  /** Rows whose live value kept changing while they were compared (three times): recount them again. */
  skipped: Array<string | number>;
  /** Rows whose source value the counter cannot take; the recount went on with the others. */
  refused: RecountRefusal[];
  /** Where a walk stopped at `limit`, to pass as `after`; null when it reached the end (or ids were given). */
  cursor: string | number | null;
}

/**
 * Options of `CounterService.audit()`: the rows to compare, by default the whole table. Validated as
 * `RecountOptions` are.
 */
export interface AuditOptions {
  /** These rows. */
  ids?: ReadonlyArray<string | number>;
  /** This many rows picked at random (all of them in a smaller table). */
  sample?: number;
  /** Rows read from the source per step (of a walk, a sample or the ids given). @default 1000 */
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
