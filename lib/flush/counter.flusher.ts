import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { COUNTER_INSTRUMENTS, COUNTER_OPTIONS, COUNTER_TRACER } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterRegistry } from '../counter.registry.js';
import type { ResolvedCounterOptions } from '../interfaces/resolved-counter-options.interface.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';
import type { CounterInstruments } from '../metrics/counter.instruments.js';
import { CounterKeys } from '../redis/counter.keys.js';
import { FlushStore } from '../redis/flush.store.js';
import { CounterDatabase } from '../sql/counter.database.js';
import { RollingUpkeep } from '../windows/rolling.upkeep.js';
import { flushAttributes, SPAN, transactionAttributes } from '../tracing/counter-span.attributes.js';
import type { CounterTracer } from '../tracing/counter.tracer.js';
import { BatchIds } from './batch-ids.js';
import { BatchSettler } from './batch.settler.js';
import { toDeltaBatch, type ClaimedBatch, type WrittenBatch } from './claimed-batch.js';
import { FlushHistory } from './flush.history.js';
import { FlushPass, flushShardsOf, type FlushShard } from './flush.pass.js';
import { FlushPipeline, type GroupWritten } from './flush.pipeline.js';
import { LeaseKeeper } from './lease.keeper.js';
import { OutageLog, type ChangesMark } from './outage.log.js';
import { RedisDataLossDetector } from './redis-data-loss.detector.js';
import { ShardsLostWhileDown } from './shards-lost-while-down.js';

/**
 * Writes the changes waiting in Redis into the database, exactly once, from any number of instances, in
 * the steps of docs/DESIGN.md's "Flush": read the backlog, claim batches, write them (the batch ids into
 * the ledger, one UPDATE per table), acknowledge them, while LeaseKeeper renews the leases. A batch left
 * behind (a crash, a lease run out) is claimed like any other, and written unless the ledger has it.
 */
@Injectable()
export class CounterFlusher implements OnApplicationBootstrap {
  private readonly logger = new Logger('CounterFlush');
  private readonly pipeline: FlushPipeline;
  private readonly lossDetector = new RedisDataLossDetector();
  private readonly batchIds: BatchIds;
  private readonly lostWhileDown: ShardsLostWhileDown;
  private readonly settler: BatchSettler;

  constructor(
    private readonly registry: CounterRegistry,
    private readonly store: FlushStore,
    private readonly keys: CounterKeys,
    private readonly database: CounterDatabase,
    private readonly history: FlushHistory,
    private readonly outages: OutageLog,
    private readonly windowUpkeep: RollingUpkeep,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
    @Inject(COUNTER_INSTRUMENTS) private readonly instruments: CounterInstruments,
    @Inject(COUNTER_TRACER) private readonly tracer: CounterTracer,
  ) {
    this.pipeline = new FlushPipeline(database.flushBatchSize, database.transactionsAtOnce);
    this.batchIds = new BatchIds(options.keyPrefix);
    const { deploymentTag } = this.batchIds;
    this.lostWhileDown = new ShardsLostWhileDown(store, database, this.lossDetector, deploymentTag, this.logger);
    this.settler = new BatchSettler(store, this.lossDetector, history, this.logger);
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
    const pass = new FlushPass();
    const changesMade = this.outages.flushStarting();
    await this.readBacklog(pass);
    const leases = new LeaseKeeper(this.store, pass, this.options.flushLeaseMs);
    leases.start();
    try {
      await this.pipeline.run({
        claim: (rows, claimsAtOnce) => this.claim(pass, rows, claimsAtOnce),
        write: (group) => this.write(pass, group),
        acknowledge: (written) => this.acknowledge(pass, written),
        shardsLeft: () => pass.shardsLeft.length > 0,
        stopped: () => pass.stopped(),
      });
    } finally {
      await leases.stop();
    }
    await leases.releaseHeld();
    return this.finish(pass, changesMade);
  }

  /**
   * 1. The shards with something for the database, in a random order (each instance its own, so instances
   * spread over shards), from their backlog: changes waiting, a batch left behind, or a generation key
   * missing (the claim makes it again, and reports the loss if the shard had been marked).
   */
  private async readBacklog(pass: FlushPass): Promise<void> {
    const shards = flushShardsOf(this.registry.all(), this.keys);
    const checks = shards.map((shard) => this.lossDetector.before(shard.keys));
    try {
      const backlog = await this.store.backlog(shards.map((shard) => shard.keys));
      const withWork = shards.filter((shard, index) => {
        const { dirtyRows, batchRows, generation } = backlog[index];
        if (generation !== null && checks[index]({ dataLost: false, generation })) pass.shardLost(shard.entity, false);
        shard.expectedRows = batchRows > 0 ? batchRows : Math.min(dirtyRows, this.database.flushBatchSize);
        return dirtyRows > 0 || batchRows > 0 || generation === null;
      });
      pass.setShards(withWork);
    } catch (error) {
      pass.report.error = error as Error;
    }
  }

  /**
   * 2. Claims batches of shards left, `claimsAtOnce` shards per round trip, as many as the backlog says
   * hold `rows` rows. A shard gives up to `flushBatchSize` rows, so a group may hold one shard's batch more.
   */
  private async claim(pass: FlushPass, rows: number, claimsAtOnce: number): Promise<ClaimedBatch[]> {
    const claimed: ClaimedBatch[] = [];
    let claimedRows = 0;
    while (claimedRows < rows && pass.shardsLeft.length > 0 && !pass.stopped()) {
      const picked = pass.take(rows - claimedRows, claimsAtOnce);
      const batches = await Promise.all(
        picked.map((shard) =>
          this.claimBatch(pass, shard).catch((error: Error) => this.shardFailed(pass, shard, error)),
        ),
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
   * Takes the shard's lease and claims its batch: a new one, or the one left behind (`recovered`). None
   * when the shard is busy (another flusher holds it), empty, or its changes netted to zero; the lease is
   * then let go unless the shard has rows left.
   */
  private async claimBatch(pass: FlushPass, shard: FlushShard): Promise<ClaimedBatch | undefined> {
    const lostData = this.lossDetector.before(shard.keys);
    const claim = await this.store.claim(shard.keys, {
      counters: shard.entity.scriptNames,
      numericIds: shard.entity.numericId,
      token: pass.token,
      leaseMs: this.options.flushLeaseMs,
      batchId: this.batchIds.next(),
      limit: this.database.flushBatchSize,
    });
    // Only the claim that made the generation key again saw the loss happen (`dataLost`).
    const lost = lostData(claim) || (claim.dataLost && (await this.lostWhileDown.flushedBefore(pass, shard)));
    if (lost) pass.shardLost(shard.entity, claim.dataLost);
    if (claim.kind === 'busy') {
      pass.report.busyShards++;
      return undefined;
    }
    if (claim.kind === 'empty') {
      if (shard.lease.held) await this.releaseShard(pass, shard);
      return undefined;
    }
    shard.lease.taken();
    if (claim.batchId === '') {
      if (claim.moreRows > 0) pass.requeue(shard, Math.min(claim.moreRows, this.database.flushBatchSize));
      else await this.releaseShard(pass, shard);
      return undefined;
    }
    if (claim.recovered) pass.report.recoveredBatches++;
    const { generation, moreRows, recovered, unknown } = claim;
    const forDatabase = toDeltaBatch(this.keys, shard.entity, shard.index, claim.batchId, claim.rows);
    return { shard, generation, moreRows, recovered, unknown, ...forDatabase };
  }

  /**
   * 3. Writes a group of claimed batches in one transaction, each once it is ready (see `readyToWrite`).
   * A batch whose lease was lost is another flusher's now: it writes the batch, not this one. If the
   * ledger has one of the batches already (its lease ran out and another flusher recovered and wrote it),
   * the transaction wrote nothing: the batches go again each on its own (FlushPipeline), so that the
   * others are still written, and the one alone that the ledger refuses is written already.
   */
  private async write(pass: FlushPass, group: ClaimedBatch[]): Promise<GroupWritten<ClaimedBatch, WrittenBatch>> {
    const held = group.filter(({ shard }) => !shard.lease.lost);
    const ready = await Promise.all(held.map((claimed) => this.readyToWrite(pass, claimed)));
    const written: WrittenBatch[] = held.flatMap((claimed, at) =>
      ready[at] === 'written' ? [{ claimed, missingIds: [] }] : [],
    );
    const batches = held.filter((_, at) => ready[at] === 'to write');
    if (batches.length === 0) return { written, writeAlone: [] };
    try {
      const deltas = batches.map(({ batch }) => batch);
      const outcome = await this.tracer.inSpan(SPAN.transaction, transactionAttributes(deltas), () =>
        this.database.applyBatches(deltas, (late) => this.settler.endedLate(batches, late)),
      );
      if (!outcome.applied && batches.length > 1) return { written, writeAlone: batches };
      batches.forEach((claimed, index) => {
        const missingIds = outcome.applied ? outcome.missingIds[index] : [];
        if (outcome.applied) this.countWritten(pass, claimed, missingIds);
        written.push({ claimed, missingIds });
      });
    } catch (error) {
      await Promise.all(batches.map((claimed) => this.settler.forgetIfGone(claimed, pass).catch(() => undefined)));
      await Promise.all(batches.map(({ shard }) => this.shardFailed(pass, shard, error as Error)));
    }
    return { written, writeAlone: [] };
  }

  /** Counts a batch written, of whose rows `missingIds` no longer exist in the database (their changes dropped). */
  private countWritten(pass: FlushPass, { shard, batch }: ClaimedBatch, missingIds: Array<string | number>): void {
    pass.written(batch.rows.ids.length, missingIds.length);
    this.instruments.batchWritten(shard.entity, batch.rows.ids.length - missingIds.length);
    if (missingIds.length > 0) this.logger.warn(MESSAGES.rowsDropped(shard.entity.key, missingIds.map(String)));
  }

  /**
   * Readies a claimed batch for its transaction. 'written' when the database has it already: a recovered
   * batch the ledger has (it was written whole), or one with nothing left to write once the changes of
   * counters this instance does not know went back to Redis (see `giveBackUnknownCounters`).
   */
  private async readyToWrite(pass: FlushPass, claimed: ClaimedBatch): Promise<'to write' | 'written' | 'failed'> {
    try {
      if (claimed.recovered && (await this.database.isBatchApplied(claimed.batch.batchId))) return 'written';
      if (claimed.unknown.length > 0) await this.giveBackUnknownCounters(pass, claimed);
      return claimed.batch.rows.ids.length > 0 ? 'to write' : 'written';
    } catch (error) {
      await this.shardFailed(pass, claimed.shard, error as Error);
      return 'failed';
    }
  }

  /**
   * Gives the changes of counters this instance does not know (a newer deployment added them) back to
   * Redis, for an instance that knows them (see "Rolling deploys" in docs/DESIGN.md). Throws when the
   * batch is no longer this flusher's: it must then not be written.
   */
  private async giveBackUnknownCounters(pass: FlushPass, claimed: ClaimedBatch): Promise<void> {
    const { shard, batch, unknown } = claimed;
    if (!(await this.store.giveBack(shard.keys, batch.batchId, pass.token, unknown))) {
      throw new Error(MESSAGES.batchTakenOver(shard.entity.key, shard.index));
    }
    claimed.unknown = [];
  }

  /** 4. Acknowledges written batches; a failed acknowledgement is its shard's failure (its batch stays claimed). */
  private async acknowledge(pass: FlushPass, written: WrittenBatch[]): Promise<void> {
    await Promise.all(
      written.map((batch) =>
        this.acknowledgeBatch(pass, batch).catch((error: Error) => this.shardFailed(pass, batch.claimed.shard, error)),
      ),
    );
  }

  /**
   * Acknowledges a batch the database has (see BatchSettler), letting the lease go unless the shard has
   * rows left: it then goes back among the shards left, holding its lease.
   */
  private async acknowledgeBatch(pass: FlushPass, { claimed, missingIds }: WrittenBatch): Promise<void> {
    const { shard, moreRows } = claimed;
    await this.settler.acknowledge(claimed, pass.token, moreRows === 0, missingIds, pass);
    // Lost with its lease: the shard is another flusher's now.
    if (shard.lease.lost) return;
    if (moreRows > 0) pass.requeue(shard, Math.min(moreRows, this.database.flushBatchSize));
    else shard.lease.released();
  }

  /** Counts a shard's failure, and lets its lease go; its batch stays claimed in Redis for a later flush. */
  private async shardFailed(pass: FlushPass, shard: FlushShard, error: Error): Promise<undefined> {
    pass.shardFailed(error);
    await this.releaseShard(pass, shard).catch(() => undefined);
    return undefined;
  }

  private async releaseShard(pass: FlushPass, shard: FlushShard): Promise<void> {
    shard.lease.released();
    await this.store.release(shard.keys, pass.token);
  }

  /**
   * Records how the flush went (`changesMade`: this instance's changes when it began), prunes the ledger
   * and keeps windowed counters up (RollingUpkeep) when due after one that went well, and reports.
   */
  private async finish(pass: FlushPass, changesMade: ChangesMark): Promise<FlushReport> {
    const { report } = pass;
    if (pass.lostShards > 0) this.history.redisDataLost(pass.lostShards, [...pass.lostEntities], [...pass.keysMadeOf]);
    this.history.flushEnded(report, pass.shardsWithWork);
    this.outages.flushEnded(report, changesMade);
    if (!report.error) {
      this.lossDetector.shardsInPlace();
      await this.database.pruneLedgerWhenDue();
      await this.windowUpkeep.afterFlush();
    }
    const done = pass.done();
    this.instruments.flushed(done, pass.lostShards);
    return done;
  }

  /**
   * Redis data loss: marks the shards and reports a loss that happened while no instance ran (see
   * ShardsLostWhileDown).
   */
  async onApplicationBootstrap(): Promise<void> {
    const lost = await this.lostWhileDown.markShards(flushShardsOf(this.registry.all(), this.keys));
    if (lost.length === 0) return;
    const entities = [...new Set(lost.map((shard) => shard.entity))];
    this.history.redisDataLost(lost.length, entities, entities);
    this.instruments.redisDataLost();
  }
}
