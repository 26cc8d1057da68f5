import type { CounterFailureReason } from '../exceptions/counter-error-kind.js';

/** A loss of counter data in Redis, as detected by this instance. */
export interface RedisDataLossReport {
  /** When this instance noticed it. */
  detectedAt: Date;
  /** Shards whose data was gone. */
  shards: number;
  /** The entities (class names) of those shards. */
  entities: string[];
  /** What to run to repair their counters: a recount of each counter that declares a source. */
  repair: string;
  /**
   * This instance's last successful flush before the loss. Changes acknowledged before it are in the
   * database; the ones after it and not yet flushed are what was lost, at most.
   */
  lastSuccessfulFlushAt: Date | null;
}

/** What `CounterService.status()` reports: the backlog in Redis and this instance's flushing. */
export interface CounterStatus {
  /** Whether Redis answered. When it did not, the backlog fields are null. */
  redisAvailable: boolean;
  /**
   * Rows whose changes wait in Redis for the database, all instances: the dirty rows plus the rows of the
   * claimed batches, so a row changed again while its batch is written counts twice (counting it once would
   * cost a comparison of the two per shard).
   */
  pendingRows: number | null;
  /** Batches claimed and not yet acknowledged: being written, or left by a flush that failed. */
  inFlightBatches: number | null;
  /** Age of the oldest change not yet in the database, in milliseconds; null when nothing waits. */
  oldestPendingAgeMs: number | null;
  /**
   * This instance's last flush that wrote everything it found. A flush that found every shard with
   * changes waiting in another instance's hands (their leases taken) does not count: that instance may
   * be the one failing.
   */
  lastSuccessfulFlushAt: Date | null;
  /** This instance's last flush that failed (fully or for some shards). */
  lastFailedFlushAt: Date | null;
  /**
   * What kind of failure that flush's first error was (`'database-unavailable'`, `'constraint-violation'`,
   * …; see CounterFailureReason), not its message: status may be served to clients, and a driver's
   * message names tables, constraints and hosts. The error itself is logged (the scheduled flush logs
   * each failure; `flush()` returns it in its report). Null until a flush fails; kept after a success.
   */
  lastFlushError: CounterFailureReason | null;
  /** Flushes in a row that failed on this instance; the scheduled flush backs off while it grows. */
  consecutiveFailedFlushes: number;
  /** The last loss of Redis data this instance detected, if any. */
  lastRedisDataLoss: RedisDataLossReport | null;
}
