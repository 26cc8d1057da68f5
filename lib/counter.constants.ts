/** Metadata key under which `@Counted()` stores an entity's counted properties. */
export const COUNTED_METADATA = 'counter:counted';

/** Internal token of the options after defaults were merged. */
export const COUNTER_OPTIONS = 'counter:options';

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
  flushLeaseMs: 30_000,
  flushMaxBackoffMs: 60_000,
  cleanRowTtlSeconds: 3_600,
  ledgerRetentionMs: 7 * 24 * 3_600_000,
  redisCommandTimeoutMs: 1_000,
  databaseTimeoutMs: 10_000,
} as const;

/**
 * Rows per flush transaction where `flushBatchSize` is not set, on PostgreSQL and MySQL/MariaDB: each
 * row stays locked until its transaction commits. SQLite has its own default (see sqlite.ts).
 */
export const DEFAULT_FLUSH_BATCH_SIZE = 1_000;

/** Attempts at seeding a row before giving up: each retry means a flush acknowledged in between. */
export const SEED_ATTEMPTS = 20;

/** Attempts at a batch transaction that failed with a serialization error, a lock timeout or a busy database. */
export const TRANSACTION_ATTEMPTS = 3;

/**
 * Attempts at a batch transaction that a deadlock rolled back. PostgreSQL breaks a deadlock only after
 * `deadlock_timeout` (1 s), usually by rolling back the flush, and an outside transaction that locks
 * the same rows in another order can catch the retry again: with 3 attempts chaos scenario 8 saw a
 * flush give up (and report the deadlock) in one CI run of several. A batch that gives up stays in
 * Redis for a later flush, so this is about reports, not counts. A busy SQLite keeps 3 attempts: the
 * flush's backoff, not these retries, waits out an outage.
 */
export const DEADLOCK_ATTEMPTS = 5;

/** Internal token of the TypeORM data source whose entities are counted. */
export const COUNTER_DATA_SOURCE = 'counter:data-source';

/**
 * Most counter changes in one increment script call. On a single Redis more requested at once go in
 * the next turn of the event loop (see tick-queue.ts). Small enough that Redis runs one call while the
 * app handles the replies of the last, large enough that a call's fixed cost is shared: 12 to 25 gave
 * the same throughput in the increment bench, 200 about half.
 */
export const MAX_CHANGES_PER_CALL = 20;

/**
 * Rows one read or seed script call takes. A script runs alone on its Redis, so a call for thousands of
 * rows (a large `getMany`) would hold up every other client for milliseconds; a page of 100 rows still
 * goes in one call. At this size a read call runs about 0.6 ms, a seed call about 2 ms (scaled from
 * 0.23 and 0.79 ms measured for 100 rows on this project's machine).
 */
export const MAX_ROWS_PER_CALL = 250;

/**
 * Shards whose backlog one status script call reads (see status.script.ts). A call holds Redis for about
 * 3.5 µs per shard (634–702 µs for 192 shards, half of them dirty, measured alone), so a call stays below
 * a millisecond however many entities an app counts, while three entities of 64 shards take one call.
 */
export const MAX_SHARDS_PER_STATUS_CALL = 256;
