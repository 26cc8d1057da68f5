/** What one call of `CounterService.flush()` did. */
export interface FlushReport {
  /** Batches written to the database (each one transaction), including recovered ones. */
  batches: number;
  /** Rows updated in the database. */
  rows: number;
  /** Batches left behind by another flusher that this flush finished. */
  recoveredBatches: number;
  /** Rows whose database row no longer existed; their pending deltas were dropped. */
  droppedRows: number;
  /** Shards skipped because another flusher held their lease. */
  busyShards: number;
  /**
   * Shards whose lease ran out while this flush held them (it could not renew it in time, e.g. a process
   * paused past `flushLeaseMs`): nothing more of them was written or acknowledged here; whoever holds
   * the lease next finishes their batch.
   */
  lostLeases: number;
  /** Shards whose batch could not be written (the batch stays in Redis for the next flush). */
  failedShards: number;
  /** Wall time of the flush, in milliseconds. */
  durationMs: number;
  /** The first error met: a shard that failed, or the backlog that could not be read (Redis unreachable). */
  error?: Error;
}
