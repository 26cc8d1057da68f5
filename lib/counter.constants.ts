/** Metadata key under which `@Counted()` stores an entity's counted properties. */
export const COUNTED_METADATA = 'counter:counted';

/** Metadata key under which `@RollingCount()` stores an entity's rolling count properties. */
export const ROLLING_COUNT_METADATA = 'counter:rolling-count';

/** Metadata key under which `@LiveCounts()` stores a route's overlay options. */
export const LIVE_COUNTS_METADATA = 'counter:live-counts';

/** Internal token of the options after defaults were merged. */
export const COUNTER_OPTIONS = 'counter:options';

/** Internal token of the metrics sink (`CounterInstruments`): a no-op unless `metrics` is on. */
export const COUNTER_INSTRUMENTS = 'counter:instruments';

/** Internal token of the tracer (`CounterTracer`): a no-op unless `tracing` is on. */
export const COUNTER_TRACER = 'counter:tracer';

/** Prefix of the job names the module registers in `SchedulerRegistry`. */
export const COUNTER_FLUSH_JOB_PREFIX = 'counter:flush';

/** Largest magnitude a counter can hold and still be exact as a JavaScript number. */
export const MAX_SAFE_COUNT = Number.MAX_SAFE_INTEGER;

export const COUNTER_DEFAULTS = {
  redis: 'redis://127.0.0.1:6379',
  keyPrefix: 'ctr',
  shards: 64,
  slotsPerEntity: 16,
  flushEnabled: true,
  flushOnShutdown: true,
  flushIntervalMs: 1_000,
  flushConcurrency: 4,
  flushMaxBackoffMs: 60_000,
  cleanRowTtlSeconds: 3_600,
  idempotencyTtlSeconds: 86_400,
  ledgerRetentionMs: 7 * 24 * 3_600_000,
  bucketRetentionMs: { hour: 7 * 24 * 3_600_000, day: 400 * 24 * 3_600_000 },
  redisCommandTimeoutMs: 1_000,
  databaseTimeoutMs: 10_000,
  metrics: false,
  tracing: false,
  repairOnDataLoss: false,
  acceptLossOnEviction: false,
  durability: 'none',
} as const;

/**
 * Shortest lease where `flushLeaseMs` is not set (the default is one flush interval): a lease is renewed
 * every third of its length, so it outlives two late renewals of 333 ms, a pause of the event loop or
 * a slow Redis, before another instance may take its shards over.
 */
export const MIN_DEFAULT_FLUSH_LEASE_MS = 1_000;

/** Prefix of the metric names where `metrics.prefix` is not set. */
export const DEFAULT_METRICS_PREFIX = 'nestjs_counter_';

/** Defaults of `CounterHealthIndicator.isHealthy()`'s options. */
export const HEALTH_DEFAULTS = {
  degradedAfterMs: 60_000,
  downAfterFailedFlushes: 3,
} as const;

/**
 * Rows per flush transaction where `flushBatchSize` is not set, on PostgreSQL and MySQL/MariaDB: each
 * row stays locked until its transaction commits. SQLite has its own default (see sqlite.dialect.ts).
 */
export const DEFAULT_FLUSH_BATCH_SIZE = 1_000;

/**
 * Longest a load of rows retries while flushes acknowledge batches of their shards (each retry means one
 * did) or hold a change of a row in flight. A healthy flush is done with a shard within milliseconds, so
 * contention past this is a stall (a batch stuck until its lease runs out), which the caller is told of.
 */
export const SEED_CONTENTION_TIMEOUT_MS = 2_000;

/** Longest random wait before a retry of a contended load: a few flushes of a shard long. */
export const SEED_BACKOFF_MAX_MS = 8;

/** Attempts at a batch transaction that failed with a serialization error, a lock timeout or a busy database. */
export const TRANSACTION_ATTEMPTS = 3;

/**
 * Attempts at a batch transaction that a deadlock rolled back: an outside transaction that locks the
 * same rows in another order can catch the retry again. A batch that gives up stays in Redis for a later
 * flush, so this is about reports, not counts.
 */
export const DEADLOCK_ATTEMPTS = 5;

/** Internal token of the TypeORM data source whose entities are counted. */
export const COUNTER_DATA_SOURCE = 'counter:data-source';

/**
 * Most counter changes in one increment script call; on a single Redis more asked for at once go in the
 * next turn (see turn.batcher.ts). Small enough that Redis runs one call while the app reads the replies
 * of the last, large enough that a call's fixed cost is shared (docs/PERFORMANCE.md, "Increments
 * batched per turn").
 */
export const MAX_CHANGES_PER_CALL = 20;

/**
 * Rows one read or seed script call takes. A script runs alone on its Redis, so a call for thousands of
 * rows (a large `getMany`) would hold up every other client for milliseconds; a page of 100 rows still
 * goes in one call.
 */
export const MAX_ROWS_PER_CALL = 250;

/**
 * Shards one status or renew script call takes (see status.lua.ts, renew.lua.ts): few enough that a
 * call holds Redis below a millisecond however many entities an app counts, while three entities of 64
 * shards take one call.
 */
export const MAX_SHARDS_PER_STATUS_CALL = 256;

/** Longest idempotency key a change may carry, in characters: each is kept in Redis for its lifetime. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/**
 * Expired idempotency keys a keyed change removes from its shard's record, so the record shrinks
 * without a scan: more than the one key the change adds (see increment.lua.ts).
 */
export const IDEMPOTENCY_PRUNE_PER_CHANGE = 8;

/**
 * How long changes given back for a counter the flusher did not know (a rolling deploy, see
 * give-back.lua.ts) wait for a flusher that knows it, counted from the last give-back of the shard: a claim
 * by a flusher that does not know the counter either then drops them (the counter was removed). Longer
 * than any rolling deploy; they carry no TTL, so eviction never drops them sooner.
 */
export const UNKNOWN_CHANGES_KEPT_MS = 7 * 24 * 3_600_000;
