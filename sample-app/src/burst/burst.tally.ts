/** A counter's value in SQL and live. */
export interface BurstValues {
  like_count: number;
  view_count: number;
}

/** A burst as the page shows it, from its first request to the flush that brought it all into SQL. */
export interface BurstTally {
  solutionId: number;
  /** Sending the requests; waiting until the solution's changes are all in SQL; done. */
  phase: 'sending' | 'flushing' | 'done';
  startedAt: string;
  /** When its changes were all in SQL. */
  doneAt: string | null;
  visitors: number;
  /** Requests it sends in all, and those answered so far. */
  requests: number;
  answered: number;
  /** Changes the app accepted: views, and likes or unlikes that changed something. */
  accepted: number;
  views: number;
  /** Likes minus unlikes. */
  likes: number;
  /** Requests refused, and the first refusal's message. */
  refused: number;
  refusal: string | null;
  /** The solution's live values before the burst. */
  before: BurstValues;
  /** How far the solution's SQL values trail its live ones (both counters), while flushing. */
  pending: number | null;
  /** What the flushes since its start did (FlushLoop's, see FlushLog and SqlStatementCounter). */
  flushes: number;
  rowsWritten: number;
  batches: number;
  statements: number;
  updates: number;
  transactions: number;
  /**
   * The solution's SQL values at the end, and how far they are from `before` plus the accepted changes
   * (both counters, either way): 0 unless a change was lost, doubled, or made by another client meanwhile.
   */
  sql: BurstValues | null;
  lost: number | null;
}
