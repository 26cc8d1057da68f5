import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';

/** A Redis Cluster for the module to connect to (it creates the ioredis `Cluster` and closes it). */
export interface CounterClusterConnection {
  /** Startup nodes: at least one reachable node; the others are discovered. */
  clusterNodes: ClusterNode[];
  /**
   * ioredis cluster options. The module overrides the ones that would resend a command after its
   * caller was told it failed (`enableOfflineQueue`, `retryDelayOnFailover`, and in `redisOptions`
   * `autoResendUnfulfilledCommands`, `maxRetriesPerRequest`, the timeouts).
   */
  clusterOptions?: ClusterOptions;
}

/** A Redis connection the module can use: a client you own, or what the module should connect with. */
export type CounterRedisConnection = Redis | Cluster | RedisOptions | CounterClusterConnection | string;

/** Options of `CounterModule.forRoot()` / `forRootAsync()`. Every field is optional. */
export interface CounterModuleOptions {
  /**
   * An existing ioredis `Redis` or `Cluster` (the module never closes it); or a `redis://` URL, ioredis
   * options, or `{ clusterNodes, clusterOptions }` for a Redis Cluster (the module creates the client
   * and closes it on shutdown).
   * @default 'redis://127.0.0.1:6379'
   */
  redis?: CounterRedisConnection;
  /**
   * Prefix of every key the module writes. Two apps sharing one Redis and counting the same table
   * must use different prefixes unless they share the database too.
   * @default 'ctr'
   */
  keyPrefix?: string;
  /**
   * Shards per entity. Each shard has its own dirty set and flush lease, so this is how many flushers
   * can work on one table at once. Changing it on a live system re-homes rows: flush everything first.
   * @default 64
   */
  shards?: number;
  /**
   * Cluster slots one entity's shards spread over (at most `shards`): shard n lives in slot group
   * n mod slotsPerEntity. A page read costs one script call per slot it touches, and increments of one
   * turn of the event loop one call per slot; more slots spread an entity over more masters. Part of the
   * key layout, like `shards`: flush everything before changing it.
   * @default 16
   */
  slotsPerEntity?: number;
  /**
   * Run the flush on a timer. Turn off in tests that call `CounterService.flush()` themselves.
   * @default true
   */
  flushEnabled?: boolean;
  /**
   * Time between two scheduled flushes, in milliseconds. The database trails Redis by about this much
   * plus one flush. A flush still running at a tick is followed by the next one as soon as it ends.
   * Also the base of the backoff after failed flushes, with `flushCron` too.
   * @default 1000
   */
  flushIntervalMs?: number;
  /**
   * Run the scheduled flush on a cron expression (the `cron` package's syntax, seconds optional, e.g.
   * `'0,15,30,45 * * * * *'`: every 15 s) instead of every `flushIntervalMs`; give one of the two. The
   * job is registered in `SchedulerRegistry.getCronJobs()`, and ticks as the interval does (see
   * `flushIntervalMs`).
   * @default undefined: the flush runs every `flushIntervalMs`
   */
  flushCron?: string;
  /**
   * Rows a flush worker gathers from one or more shards before it writes them in one transaction (one
   * UPDATE statement per table). A shard gives at most this many rows per claim, so a transaction holds
   * fewer than twice this many.
   * @default 1000 on PostgreSQL and MySQL/MariaDB, 8000 on SQLite (one writer at a time, which locks the
   * whole database whatever the transaction's size; fewer, larger transactions mean fewer commits)
   */
  flushBatchSize?: number;
  /**
   * Batch transactions the instance's flushes run at once on PostgreSQL and MySQL/MariaDB, each on a
   * pooled connection of its own: keep it well below the pool size, so that requests still get
   * connections while a backlog is flushed. A transaction that outlives `databaseTimeoutMs` (its flush
   * gave up on it) keeps its place until the database ends it, so later flushes never take more
   * connections than this. SQLite runs one at a time whatever this is.
   * @default 4
   */
  flushConcurrency?: number;
  /**
   * The longest a flusher's lease on a shard lives without renewal, in milliseconds. A flush renews the
   * leases it holds every third of this while it runs, however long its transactions take; a flusher that
   * died (or froze) stops renewing, and another instance takes its shards over once this has passed, at
   * its next flush. Shorter means a faster takeover; longer tolerates longer pauses of the event loop.
   * @default the flush interval, at least 1000: a dead flusher's shards are flushed within about two
   * intervals
   */
  flushLeaseMs?: number;
  /**
   * Run one last flush when the application shuts down (`app.close()`, SIGTERM with shutdown hooks).
   * @default true
   */
  flushOnShutdown?: boolean;
  /**
   * Upper bound of the backoff between failed scheduled flushes (exponential, with jitter).
   * @default 60000
   */
  flushMaxBackoffMs?: number;
  /**
   * Seconds a row stays cached in Redis after it was seeded or first changed since the last flush.
   * Changes still waiting for a flush never expire with it: they are kept per shard, and a row read
   * again is seeded from the database value plus them.
   * @default 3600
   */
  cleanRowTtlSeconds?: number;
  /**
   * Seconds a change's `idempotencyKey` is remembered: within them, a later change with the same key on
   * the same row applies nothing. Retries must end within this window.
   * @default 86400 (one day)
   */
  idempotencyTtlSeconds?: number;
  /**
   * How long the ledger keeps the id of an applied batch, in milliseconds. A batch left behind by a
   * crashed flusher must be recovered within this time, or it could be applied twice.
   * @default 604800000 (7 days)
   */
  ledgerRetentionMs?: number;
  /**
   * How long the buckets of windowed counters (`@Counted({ windows })`) are kept, per granularity, in
   * milliseconds: the flush deletes older ones from `CounterBucket`, a few at a time, and a window that
   * reaches back past them is refused (CounterWindowBeyondRetentionError).
   * @default { hour: 604800000 (7 days), day: 34560000000 (400 days) }
   */
  bucketRetentionMs?: { hour?: number; day?: number };
  /**
   * Timeout of one Redis command sent by a client the module created, in milliseconds. A user-supplied
   * client keeps its own settings.
   * @default 1000
   */
  redisCommandTimeoutMs?: number;
  /**
   * Longest wait for one database operation of the module (a batch transaction, a read of rows to
   * load into Redis), in milliseconds. Past it the operation is abandoned: a flush stops and leaves its
   * batches in Redis, a read fails with `CounterDatabaseUnavailableError`. Bounds the final flush at
   * shutdown too, so a database that stopped answering cannot hang it.
   * @default 10000
   */
  databaseTimeoutMs?: number;
  /**
   * Prometheus metrics through `prom-client` (an optional peer, loaded only when this is on): `true`
   * registers them in prom-client's global `register` (the one `@willsoto/nestjs-prometheus` serves),
   * an object may name another registry and a prefix. See docs/OPERATING.md, "Metrics", for the names.
   * @default false
   */
  metrics?: boolean | CounterMetricsOptions;
  /**
   * OpenTelemetry spans (through `@opentelemetry/api`, an optional peer, loaded only when this is on) for
   * each flush, each batch transaction and each load of rows from the database. Without an SDK
   * registered they are no-ops.
   * @default false
   */
  tracing?: boolean;
  /**
   * When Redis loses data, recount, in the background, the counters of the entities concerned that
   * declare a source (`@Counted({ source })`): once per loss whichever instances notice it, retried until
   * it finishes, taken over by another instance with this option if the one walking it stops. Also
   * recounts the rows whose changes were refused while Redis was unreachable (up to 10,000 per instance;
   * beyond, their counters whole) once it is back. Off, the log and `status().lastRedisDataLoss` name the
   * recount to run.
   * @default false
   */
  repairOnDataLoss?: boolean;
  /**
   * Start, and report healthy, even when Redis's `maxmemory-policy` may evict keys without a TTL
   * (`allkeys-*`), which hold changes not yet in the database: accepts that eviction loses them. Off, such a
   * Redis is refused at bootstrap (`CounterConfigurationError`), logged as an error when first reached
   * later, and the health indicator reports down. `noeviction` and `volatile-*` need no opt-out.
   * @default false
   */
  acceptLossOnEviction?: boolean;
  /**
   * `'fsync'`: a change resolves only once Redis has fsynced it to its AOF (one `WAITAOF 1 0` per master
   * and turn of the event loop serves every change of the turn), so a crash of Redis loses no acknowledged
   * change even with `appendfsync everysec`, at the cost of up to a second per change there. Needs
   * `WAITAOF` (Redis 7.2+, Valkey 8+) and `appendonly yes` on every master, or the module refuses to start
   * (`CounterConfigurationError`). A wait that does not confirm within 2 s fails the change with
   * `CounterStoreUnavailableError` (`outcomeUnknown: true`). `'none'`: a change resolves once Redis applied it.
   * @default 'none'
   */
  durability?: CounterDurability;
}

/** When a change resolves: once Redis applied it (`'none'`), or once it is in Redis's AOF on disk (`'fsync'`). */
export type CounterDurability = 'none' | 'fsync';

/** Where and how the module registers its Prometheus metrics. */
export interface CounterMetricsOptions {
  /**
   * A prom-client `Registry`. A metric of the same name already in it (another module or app in the
   * process) is reused, never registered twice.
   * @default prom-client's global `register`
   */
  registry?: CounterMetricsRegistry;
  /**
   * Prefix of every metric name.
   * @default 'nestjs_counter_'
   */
  prefix?: string;
}

/**
 * What the module needs of a prom-client `Registry`; a `Registry` is one (typed structurally, so that
 * the options do not require prom-client's types).
 */
export interface CounterMetricsRegistry {
  getSingleMetric(name: string): unknown;
}

/** Options fixed when the module is defined: given to `forRoot()` and next to `useFactory` in `forRootAsync()`. */
export interface CounterModuleExtras {
  /**
   * Register `CounterService` and `CounterInterceptor` in every module.
   * @default true
   */
  isGlobal?: boolean;
  /**
   * Name of the TypeORM data source whose entities are counted (the `name` given to `TypeOrmModule`).
   * @default 'default'
   */
  dataSource?: string;
}
