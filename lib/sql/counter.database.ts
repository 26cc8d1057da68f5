import { Inject, Injectable, Logger } from '@nestjs/common';
import { In, type DataSource, type QueryRunner } from 'typeorm';
import { COUNTER_DATA_SOURCE, COUNTER_OPTIONS, DEADLOCK_ATTEMPTS, TRANSACTION_ATTEMPTS } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import { CounterDatabaseUnavailableError } from '../exceptions/counter-database-unavailable.error.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { BucketCounter, CounterDialect } from './counter-dialect.js';
import type { DeltaBatch } from '../model/delta-batch.js';
import { canonicalIdText } from '../model/row-id.js';
import type { BucketRange } from '../model/time-bucket.js';
import { CounterBuckets, type StoredBuckets } from './counter.buckets.js';
import { CounterLedger } from './counter.ledger.js';
import { CounterRolling } from './counter-rolling.js';
import { RollingCountQuery } from './rolling-count.query.js';
import { CounterTopQuery } from './counter-top.query.js';
import { dialectFor } from './dialect-for.js';
import { onPrimary } from './on-primary.js';
import { readFailure } from './read-failure.js';
import { addTableDeltas } from './table-deltas.js';
import { groupBy } from '../collections.js';
import { compareIds, mergeBatches } from './merge-batches.js';

export type ApplyOutcome =
  /** Per batch (in the order given), the ids that matched no row: deleted since their counters changed. */
  | { applied: true; missingIds: Array<Array<string | number>> }
  /** The ledger already had one of the batches: another flusher committed it. Nothing was written. */
  | { applied: false };

const READ_CHUNK = 1_000;

/** Everything the module asks of the SQL database: read counters, apply batches, keep the ledger. */
@Injectable()
export class CounterDatabase {
  /** What differs for this data source's database: statement shapes, limits, error codes. */
  readonly dialect: CounterDialect;
  /**
   * Batch transactions this instance runs at once, over all its flushes (the scheduled one, `flush()`
   * calls): `flushConcurrency`, and one where the driver has a single connection (SQLite), on which two
   * transactions would interleave.
   */
  readonly transactionsAtOnce: number;
  /** Rows a flush gathers per transaction: the option `flushBatchSize`, else the dialect's default. */
  readonly flushBatchSize: number;
  private running = 0;
  /** Transactions waiting for one of those running to end, first come first served. */
  private readonly waiting: Array<() => void> = [];
  /** The dialect for the server reached, once asked (see `CounterDialect.forServer`). */
  private serverDialect?: Promise<CounterDialect>;
  private readonly ledger: CounterLedger;
  /** The bucket table, for the upkeep and ranking of windowed counters (lib/windows). */
  readonly buckets: CounterBuckets;
  /** The rolling windows' tables, for the same. */
  readonly rolling: CounterRolling;
  /** The database's side of a live `top`. */
  readonly top: CounterTopQuery;
  /** The statement of the overlay of rolling counts. */
  readonly rollingCounts: RollingCountQuery;
  /** When this instance last pruned the ledger (0: not yet, so its first flush that goes well does). */
  private lastPrunedAt = 0;
  private readonly logger = new Logger('CounterFlush');

  constructor(
    @Inject(COUNTER_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {
    this.dialect = dialectFor(dataSource);
    this.transactionsAtOnce = Math.min(options.flushConcurrency, this.dialect.parallelTransactions);
    this.flushBatchSize = options.flushBatchSize ?? this.dialect.defaultFlushBatchSize;
    this.ledger = new CounterLedger(dataSource, this.dialect);
    this.buckets = new CounterBuckets(dataSource, this.dialect, this.ledger);
    this.rolling = new CounterRolling(dataSource, this.dialect);
    this.top = new CounterTopQuery(dataSource, this.dialect, this.ledger, this.buckets, this.rolling);
    this.rollingCounts = new RollingCountQuery(dataSource, this.dialect, this.ledger, this.buckets, this.rolling);
  }

  /** Counter values of the rows that exist, by id as the database returns it. */
  readCounters(entity: CountedEntity, ids: Array<string | number>): Promise<Map<string, Record<string, unknown>>> {
    return this.read(entity, 'reading counters', () => this.readCountersNow(entity, ids));
  }

  /**
   * The stored buckets of one row's windowed counter in `ranges`, and whether the ledger holds `batchId`
   * (a batch in flight, whose buckets the caller adds only if not), both from one snapshot.
   */
  readBuckets(
    entity: CountedEntity,
    counter: CounterField,
    id: string | number,
    ranges: BucketRange[],
    batchId: string | undefined,
  ): Promise<StoredBuckets> {
    return this.read(entity, 'reading buckets', () => this.buckets.read(entity, counter, id, ranges, batchId));
  }

  /**
   * Deletes at most `limit` buckets of one counter and granularity that start before `before` (Unix
   * seconds); returns how many.
   */
  pruneBuckets(counter: BucketCounter, before: number, limit: number): Promise<number> {
    return this.bounded('pruning buckets', () => this.buckets.prune(counter, before, limit));
  }

  /**
   * Applies batches (of one or more shards and entities) in one transaction: the ledger insert first (so
   * a duplicate blocks and fails before it locks any counted row), then per table its rolling windows'
   * rows (share-locked, see CounterRolling), one UPDATE, the upsert of its windowed counters' buckets
   * and that of their rolling sums.
   * @param endedLate called with the transaction's outcome (undefined when it failed) if it ends after the
   *   wait for it was given up (`databaseTimeoutMs`): it may still have committed.
   */
  applyBatches(batches: DeltaBatch[], endedLate?: (outcome: ApplyOutcome | undefined) => void): Promise<ApplyOutcome> {
    return this.bounded('writing a batch', () => this.inTurn(() => this.applyBatchesNow(batches)), endedLate);
  }

  /**
   * Runs `work` in a transaction of its own, in turn with the flush's (see `transactionsAtOnce`), again
   * after a deadlock or serialization failure, as a batch's is; `work` gets the dialect of the server.
   */
  transaction<T>(operation: string, work: (runner: QueryRunner, dialect: CounterDialect) => Promise<T>): Promise<T> {
    return this.bounded(operation, () =>
      this.inTurn(() =>
        this.retried(
          async (runner) => work(runner, await this.dialectOfServer(runner)),
          () => true,
        ),
      ),
    );
  }

  /** Runs a read for callers of `entity` within `databaseTimeoutMs`, a failure turned into a counter error. */
  read<T>(entity: CountedEntity, operation: string, run: () => Promise<T>): Promise<T> {
    return this.bounded(operation, run).catch((error: Error) => {
      throw readFailure(this.dialect, entity, operation, error);
    });
  }

  isBatchApplied(batchId: string): Promise<boolean> {
    return this.bounded('reading the ledger', () => this.ledger.has(batchId));
  }

  /**
   * The shards of an entity that ever flushed a batch whose id starts with `batchIdPrefix`, as far as the
   * ledger remembers (see `ledgerRetentionMs`).
   */
  flushedShards(entity: CountedEntity, batchIdPrefix: string): Promise<Set<number>> {
    return this.bounded('reading the ledger', () => this.ledger.flushedShards(entity.key, batchIdPrefix));
  }

  /**
   * Deletes ledger rows older than `ledgerRetentionMs`, if the last pruning is a tenth of it (at most an
   * hour) ago: called after each flush that went well. A failure is logged; a later flush tries again.
   */
  async pruneLedgerWhenDue(): Promise<void> {
    const { ledgerRetentionMs } = this.options;
    if (Date.now() - this.lastPrunedAt < Math.min(ledgerRetentionMs / 10, 3_600_000)) return;
    this.lastPrunedAt = Date.now();
    await this.bounded('pruning the ledger', () => this.ledger.prune(ledgerRetentionMs)).catch((error: Error) =>
      this.logger.warn(MESSAGES.ledgerPruneFailed(error.message)),
    );
  }

  private async inTurn<T>(run: () => Promise<T>): Promise<T> {
    // A transaction that ends hands its place to the first one waiting on the next turn of the event
    // loop, once the Redis calls queued meanwhile (its acknowledgements, the next claims) have been sent:
    // with a driver that runs statements on this thread (better-sqlite3), Redis and the database then
    // work side by side instead of taking turns (see docs/PERFORMANCE.md, "Flush tunings").
    if (this.running < this.transactionsAtOnce) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await run();
    } finally {
      const next = this.waiting.shift();
      if (next) setImmediate(next);
      else this.running--;
    }
  }

  /**
   * Gives up waiting after `databaseTimeoutMs`. The operation itself is not cancelled: a transaction
   * that commits later is found in the ledger by the flush that recovers its batch.
   */
  private bounded<T>(
    operation: string,
    run: () => Promise<T>,
    endedLate?: (result: T | undefined) => void,
  ): Promise<T> {
    const timeoutMs = this.options.databaseTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    let abandoned = false;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abandoned = true;
        reject(new CounterDatabaseUnavailableError(MESSAGES.databaseTimeout(operation, timeoutMs)));
      }, timeoutMs);
    });
    const running = run();
    if (endedLate) {
      running.then(
        (result) => abandoned && endedLate(result),
        () => abandoned && endedLate(undefined),
      );
    }
    return Promise.race([running, expired]).finally(() => clearTimeout(timer));
  }

  private async readCountersNow(
    entity: CountedEntity,
    ids: Array<string | number>,
  ): Promise<Map<string, Record<string, unknown>>> {
    const select = Object.fromEntries(
      [entity.primary.propertyName, ...entity.counters.map((counter) => counter.propertyName)].map((p) => [p, true]),
    );
    const found = new Map<string, Record<string, unknown>>();
    // A replica behind the primary would miss batches already acknowledged in Redis: the row would be
    // loaded without them and never get them back.
    await onPrimary(this.dataSource, async (manager) => {
      const repository = manager.getRepository(entity.target);
      for (let start = 0; start < ids.length; start += READ_CHUNK) {
        const rows = await repository.find({
          select,
          where: { [entity.primary.propertyName]: In(ids.slice(start, start + READ_CHUNK)) },
          loadEagerRelations: false,
          withDeleted: true,
        });
        for (const row of rows as Record<string, unknown>[]) {
          found.set(canonicalIdText(entity, row[entity.primary.propertyName]), row);
        }
      }
    });
    return found;
  }

  private applyBatchesNow(batches: DeltaBatch[]): Promise<ApplyOutcome> {
    return this.retried(
      (runner) => this.applyInTransaction(runner, batches),
      (outcome) => outcome.applied,
    );
  }

  /** Runs `work` in a transaction, committed if `commit` says so, rolled back otherwise; retried when transient. */
  private async retried<T>(work: (runner: QueryRunner) => Promise<T>, commit: (result: T) => boolean): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const runner = this.dataSource.createQueryRunner();
      try {
        await runner.connect();
        await runner.startTransaction();
        const result = await work(runner);
        if (commit(result)) await runner.commitTransaction();
        else await runner.rollbackTransaction();
        return result;
      } catch (error) {
        if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
        const attempts = this.dialect.isDeadlock(error) ? DEADLOCK_ATTEMPTS : TRANSACTION_ATTEMPTS;
        if (attempt >= attempts || !this.dialect.isTransient(error)) throw error;
        // The other transaction holds its locks a little longer: wait (random, growing) before retrying,
        // so the two do not collide again in lockstep.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * 2 ** attempt));
      } finally {
        await runner.release().catch(() => undefined);
      }
    }
  }

  private async applyInTransaction(runner: QueryRunner, batches: DeltaBatch[]): Promise<ApplyOutcome> {
    if (!(await this.ledger.record(runner, batches))) return { applied: false };
    const missingIds = batches.map((): Array<string | number> => []);
    const dialect = await this.dialectOfServer(runner);
    // Tables in one order (by entity key), rows in id order: two flushers lock rows in the same order.
    const byEntity = [...groupBy(batches, (batch) => batch.entity.key)].sort(([a], [b]) => compareIds(a, b));
    for (const [, ofEntity] of byEntity) {
      const entity = ofEntity[0].entity;
      // The windows' rows before the entity's: see "lock order" in CounterRolling.
      const rolling = ofEntity.some((b) => b.buckets) && this.rolling.keepsSumsOf(entity);
      const starts = rolling
        ? await this.rolling.lockWindows(runner, dialect, entity, this.buckets.table(), Date.now())
        : undefined;
      const { counters, rows, batchOfRow } = mergeBatches(ofEntity);
      const missing = await addTableDeltas(this.dataSource, runner, dialect, entity, counters, rows);
      for (const row of missing) missingIds[batches.indexOf(ofEntity[batchOfRow[row]])].push(rows.ids[row]);
      const buckets = await this.buckets.add(
        runner,
        dialect,
        ofEntity,
        missing.map((row) => rows.ids[row]),
      );
      if (starts && buckets) await this.rolling.add(runner, dialect, entity, buckets, starts);
    }
    return { applied: true, missingIds };
  }

  /**
   * The dialect for the server behind the data source: asked once (`SELECT VERSION()`, on the batch's
   * connection) where the dialect's family needs it; a failed query is asked again next time.
   */
  private dialectOfServer(runner: QueryRunner): Promise<CounterDialect> {
    const forServer = this.dialect.forServer;
    if (!forServer) return Promise.resolve(this.dialect);
    this.serverDialect ??= runner.query('SELECT VERSION() AS version').then(
      (rows: Array<{ version: unknown }>) => forServer(String(rows[0]?.version ?? '')),
      (error: unknown) => {
        this.serverDialect = undefined;
        throw error;
      },
    );
    return this.serverDialect;
  }
}
