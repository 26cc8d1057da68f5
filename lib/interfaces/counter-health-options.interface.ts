/** Options of `CounterHealthIndicator.isHealthy()`. Every field is optional. */
export interface CounterHealthOptions {
  /**
   * Age of the oldest change not yet in the database past which the indicator reports `degraded`
   * (Terminus 12; Terminus 11 has no such status and reports `up`), in milliseconds.
   * @default 60000
   */
  degradedAfterMs?: number;
  /**
   * Flushes failed in a row on this instance from which the indicator reports `down`; fewer report
   * `degraded` (Terminus 12) or `up` (Terminus 11). One failure is often a passing deadlock or timeout.
   * @default 3
   */
  downAfterFailedFlushes?: number;
}
