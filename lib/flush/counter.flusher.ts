import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { COUNTER_INSTRUMENTS, COUNTER_OPTIONS, COUNTER_TRACER } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterRegistry } from '../counter.registry.js';
import type { CountedEntity } from '../model/counted-entity.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';
import type { CounterInstruments } from '../metrics/counter.instruments.js';
import { CounterKeys, type ShardKeys } from '../redis/counter.keys.js';
import { FlushStore, type ClaimOutcome } from '../redis/flush.store.js';
import { CounterDatabase } from '../sql/counter.database.js';
import { flushAttributes, SPAN, transactionAttributes } from '../tracing/counter-span.attributes.js';
import type { CounterTracer } from '../tracing/counter.tracer.js';
import { BatchIds } from './batch-ids.js';
import { BatchSettler } from './batch.settler.js';
import type { ClaimedBatch, WrittenBatch } from './claimed-batch.js';
import { toDeltaBatch } from './delta-batch.js';
import { FlushPipeline } from './flush.pipeline.js';
import { FlushRecord } from './flush.record.js';
import { FlushRun, type ShardWork } from './flush.run.js';
import { LeaseKeeper } from './lease.keeper.js';
import { RedisDataLossDetector } from './redis-data-loss.detector.js';
import { ShardsLostWhileDown } from './shards-lost-while-down.js';

/**
 * Writes the changes waiting in Redis into the database, exactly once, from any number of instances.
 * A flush reads every shard's backlog, then its workers (see FlushPipeline) claim batches of the shards
 * with work, write them in one transaction (the batch ids into the ledger, one UPDATE per table), and
 * acknowledge them. A batch left behind by a flusher that crashed or ran past its lease is recovered by
 * whoever claims its shard next: acknowledged if the ledger has it, written otherwise.
 */
@Injectable()
export class CounterFlusher implements OnApplicationBootstrap {
  private readonly logger = new Logger('CounterFlush');
  private readonly pipeline: FlushPipeline;
  private readonly lossDetector = new RedisDataLossDetector();
  private readonly batchIds: BatchIds;
  private readonly lostWhileDown: ShardsLostWhileDown;
  private readonly settler: BatchSettler;
  private lastPrunedAt = 0;

  constructor(
    private readonly registry: CounterRegistry,
    private readonly store: FlushStore,
    private readonly keys: CounterKeys,
    private readonly database: CounterDatabase,
    private readonly record: FlushRecord,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
    @Inject(COUNTER_INSTRUMENTS) private readonly instruments: CounterInstruments,
    @Inject(COUNTER_TRACER) private readonly tracer: CounterTracer,
  ) {
    this.pipeline = new FlushPipeline(database.flushBatchSize, database.transactionsAtOnce);
    this.batchIds = new BatchIds(options.keyPrefix);
    this.lostWhileDown = new ShardsLostWhileDown(database, this.batchIds.deploymentTag, this.logger);
    this.settler = new BatchSettler(store, this.lossDetector, record, this.logger);
  }

  /**
   * Marks the shards, so that a later loss of Redis data can be told from a first start, and reports a
   * loss that happened while no instance ran (see ShardsLostWhileDown).
   */
  async onApplicationBootstrap(): Promise<void> {
    const shards = this.allShards();
    let made: boolean[];
    try {
      made = await this.store.markShards(shards.map((work) => work.keys));
    } catch {
      // With Redis down, the first flush that reaches it finds the shards instead.
      return;
    }
    this.lossDetector.shardsInPlace();
    const lost = await this.lostWhileDown.among(shards.filter((_, index) => made[index]));
    if (lost.length === 0) return;
    const entities = [...new Set(lost.map((work) => work.entity))];
    this.record.redisDataLost(lost.length, entities, entities);
    this.instruments.redisDataLost();
  }

  flush(): Promise<FlushReport> {
    return this.tracer.inSpan(SPAN.flush, {}, async (span) => {
      const report = await this.flushNow();
      span.setAttributes(flushAttributes(report));
      if (report.error) span.fail(report.error);
      return report;
    });
  }

  private async flushNow(): Promise<FlushReport> {
    const run = new FlushRun();
    await this.findShardsWithWork(run);
    const leases = new LeaseKeeper(this.store, run, this.options.flushLeaseMs);
    leases.start();
    try {
      await this.pipeline.run({
        // Claiming recovers the batches left behind that it meets (see `claimShard`).
        claim: (rows, claimsAtOnce) => this.claim(run, rows, claimsAtOnce),
        write: (batches) => this.write(run, batches),
        acknowledge: (written) => this.acknowledge(run, written),
        shardsLeft: () => run.shardsLeft.length > 0,
        stopped: () => run.stopped(),
      });
    } finally {
      await leases.stop();
    }
    await this.releaseLeases(run);
    return this.finish(run);
  }

  /**
   * The shards with something for the database, in a random order (each instance its own, so instances
   * spread over shards), from their backlog: changes waiting, a batch left behind, or a generation key
   * missing (the claim makes it again, and reports the loss if the shard had been marked).
   */
  private async findShardsWithWork(run: FlushRun): Promise<void> {
    const shards = this.allShards();
    const checks = shards.map((work) => this.lossDetector.before(work.keys));
    try {
      const backlog = await this.store.backlog(shards.map((work) => work.keys));
      const withWork = shards.filter((work, index) => {
        const { dirtyRows, batchRows, generation } = backlog[index];
        if (generation !== null && checks[index]({ dataLost: false, generation })) run.shardLost(work.entity, false);
        work.expectedRows = batchRows > 0 ? batchRows : Math.min(dirtyRows, this.database.flushBatchSize);
        return dirtyRows > 0 || batchRows > 0 || generation === null;
      });
      run.setShards(withWork);
    } catch (error) {
      run.report.error = error as Error;
    }
  }

  /**
   * Claims batches of shards left, `claimsAtOnce` shards per round trip, as many as the backlog says
   * hold `rows` rows. A shard gives up to `flushBatchSize` rows, so a group may hold one shard's batch more.
   */
  private async claim(run: FlushRun, rows: number, claimsAtOnce: number): Promise<ClaimedBatch[]> {
    const claimed: ClaimedBatch[] = [];
    let claimedRows = 0;
    while (claimedRows < rows && run.shardsLeft.length > 0 && !run.stopped()) {
      const picked = run.take(rows - claimedRows, claimsAtOnce);
      const batches = await Promise.all(
        picked.map((work) => this.claimShard(run, work).catch((error: Error) => this.shardFailed(run, work, error))),
      );
      for (const batch of batches) {
        if (!batch) continue;
        claimed.push(batch);
        claimedRows += batch.batch.rows.ids.length;
      }
    }
    return claimed;
  }

  /**
   * Claims a batch of one shard. Returns it when it is new and has rows to write; finishes everything
   * else here: a busy or empty shard, changes that netted to zero, a batch left behind (recovered).
   */
  private async claimShard(run: FlushRun, work: ShardWork): Promise<ClaimedBatch | undefined> {
    const lostData = this.lossDetector.before(work.keys);
    const claim = await this.store.claim(work.keys, {
      counters: work.entity.counterNames,
      numericIds: work.entity.numericId,
      token: run.token,
      leaseMs: this.options.flushLeaseMs,
      batchId: this.batchIds.next(),
      limit: this.database.flushBatchSize,
    });
    // Only the claim that made the generation key again saw the loss happen (`dataLost`).
    if (lostData(claim)) run.shardLost(work.entity, claim.dataLost);
    else if (claim.dataLost && (await this.lostWhileDown.flushedBefore(run, work))) run.shardLost(work.entity, true);
    if (claim.kind === 'busy') {
      run.report.busyShards++;
      return undefined;
    }
    if (claim.kind === 'empty') {
      if (work.holding) await this.releaseShard(run, work);
      return undefined;
    }
    run.leaseTaken(work);
    if (claim.batchId === '') {
      if (claim.moreRows > 0) run.requeue(work, Math.min(claim.moreRows, this.database.flushBatchSize));
      else await this.releaseShard(run, work);
      return undefined;
    }
    const claimed: ClaimedBatch = {
      work,
      generation: claim.generation,
      moreRows: claim.moreRows,
      ...toDeltaBatch(this.keys, work.entity, work.shard, claim.batchId, claim.rows),
    };
    if (claim.recovered) {
      await this.recover(run, claimed, claim);
      return undefined;
    }
    return (await this.readyToWrite(run, claimed, claim)) ? claimed : undefined;
  }

  /**
   * Finishes a batch left behind by a flusher that may have written it, or may be writing it right now,
   * on its own: acknowledged if the ledger has it (it was written whole), written and acknowledged if not.
   */
  private async recover(run: FlushRun, claimed: ClaimedBatch, claim: ClaimOutcome & { kind: 'batch' }): Promise<void> {
    run.report.recoveredBatches++;
    if (await this.database.isBatchApplied(claim.batchId)) return this.acknowledgeBatch(run, claimed, []);
    if (await this.readyToWrite(run, claimed, claim)) await this.acknowledge(run, await this.write(run, [claimed]));
  }

  /**
   * Gives the changes of counters this instance does not know (a newer deployment added them) back to
   * Redis, for an instance that knows them, before the write. False when nothing is left to write (the
   * batch, acknowledged here, held only such changes).
   */
  private async readyToWrite(
    run: FlushRun,
    claimed: ClaimedBatch,
    { batchId, unknown }: ClaimOutcome & { kind: 'batch' },
  ): Promise<boolean> {
    const { work } = claimed;
    if (unknown.length > 0 && !(await this.store.giveBack(work.keys, batchId, run.token, unknown))) {
      throw new Error(MESSAGES.batchTakenOver(work.entity.key, work.shard));
    }
    if (claimed.batch.rows.ids.length > 0) return true;
    await this.acknowledgeBatch(run, claimed, []);
    return false;
  }

  /**
   * Writes batches in one transaction. If one of them is in the ledger already (its lease ran out and
   * another flusher recovered and wrote it), nothing was written: each goes again on its own, so that
   * the others are still written.
   */
  private async write(run: FlushRun, group: ClaimedBatch[]): Promise<WrittenBatch[]> {
    // A shard whose lease ran out is another flusher's now: it writes the batch, not this one.
    const batches = group.filter(({ work }) => !work.leaseLost);
    if (batches.length === 0) return [];
    try {
      const deltas = batches.map(({ batch }) => batch);
      const outcome = await this.tracer.inSpan(SPAN.transaction, transactionAttributes(deltas), () =>
        this.database.applyBatches(deltas, (late) => this.settler.endedLate(batches, late)),
      );
      if (!outcome.applied) {
        if (batches.length === 1) return [{ claimed: batches[0], missingIds: [] }];
        for (const claimed of batches) await this.acknowledge(run, await this.write(run, [claimed]));
        return [];
      }
      return batches.map((claimed, index) => {
        const missingIds = outcome.missingIds[index];
        run.written(claimed.batch.rows.ids.length, missingIds.length);
        this.instruments.batchWritten(claimed.work.entity, claimed.batch.rows.ids.length - missingIds.length);
        if (missingIds.length > 0) {
          this.logger.warn(MESSAGES.rowsDropped(claimed.work.entity.key, missingIds.map(String)));
        }
        return { claimed, missingIds };
      });
    } catch (error) {
      await Promise.all(batches.map((claimed) => this.settler.forgetIfGone(claimed, run).catch(() => undefined)));
      await Promise.all(batches.map(({ work }) => this.shardFailed(run, work, error as Error)));
      return [];
    }
  }

  /** Acknowledges written batches; a failed acknowledgement is its shard's failure (its batch stays claimed). */
  private async acknowledge(run: FlushRun, written: WrittenBatch[]): Promise<void> {
    await Promise.all(
      written.map(({ claimed, missingIds }) =>
        this.acknowledgeBatch(run, claimed, missingIds).catch((error: Error) =>
          this.shardFailed(run, claimed.work, error),
        ),
      ),
    );
  }

  /**
   * Acknowledges a batch the database has (see BatchSettler); the shard goes back among those left (holding
   * its lease) if it has rows left.
   */
  private async acknowledgeBatch(run: FlushRun, claimed: ClaimedBatch, missingIds: Array<string | number>) {
    const { work, moreRows } = claimed;
    await this.settler.acknowledge(claimed, run.token, moreRows === 0, missingIds, run);
    // Lost with its lease: the shard is another flusher's now.
    if (work.leaseLost) return;
    if (moreRows > 0) run.requeue(work, Math.min(moreRows, this.database.flushBatchSize));
    else work.holding = false;
  }

  /** Counts a shard's failure; its batch stays claimed in Redis for a later flush. */
  private async shardFailed(run: FlushRun, work: ShardWork, error: Error): Promise<undefined> {
    run.shardFailed(error);
    await this.releaseShard(run, work).catch(() => undefined);
    return undefined;
  }

  private async releaseShard(run: FlushRun, work: ShardWork): Promise<void> {
    work.holding = false;
    await this.store.release(work.keys, run.token);
  }

  /** A stopped flush gives back the leases of the shards it would have come back to. */
  private async releaseLeases(run: FlushRun): Promise<void> {
    const held = run.shardsLeft.filter((work) => work.holding);
    await Promise.all(held.map((work) => this.store.release(work.keys, run.token).catch(() => undefined)));
  }

  /** Records the flush's outcome, prunes the ledger now and then, and reports. */
  private async finish(run: FlushRun): Promise<FlushReport> {
    const { report } = run;
    if (run.lostShards > 0) this.record.redisDataLost(run.lostShards, [...run.lostEntities], [...run.keysMadeOf]);
    if (report.error) {
      this.record.flushFailed(report.error);
    } else {
      this.lossDetector.shardsInPlace();
      // A flush that found every shard with work in another flusher's hands did nothing this instance
      // can vouch for (that flusher may be failing): it is no success of this instance's.
      if (report.busyShards === 0 || report.busyShards < run.shardsWithWork) this.record.flushSucceeded();
      await this.pruneLedger();
    }
    const done = run.done();
    this.instruments.flushed(done, run.lostShards);
    return done;
  }

  private allShards(): ShardWork[] {
    return this.registry.all().flatMap((entity: CountedEntity) =>
      this.keys.shardsOf(entity.key).map((keys: ShardKeys, shard) => ({
        entity,
        shard,
        keys,
        holding: false,
        expectedRows: 0,
        leaseLost: false,
        leases: 0,
      })),
    );
  }

  private async pruneLedger(): Promise<void> {
    const every = Math.min(this.options.ledgerRetentionMs / 10, 3_600_000);
    if (Date.now() - this.lastPrunedAt < every) return;
    this.lastPrunedAt = Date.now();
    await this.database
      .pruneLedger(this.options.ledgerRetentionMs)
      .catch((error: Error) => this.logger.warn(MESSAGES.ledgerPruneFailed(error.message)));
  }
}
