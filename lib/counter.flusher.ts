import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { COUNTER_OPTIONS } from './counter.constants.js';
import { CounterHealth } from './counter.health.js';
import { MESSAGES } from './counter.messages.js';
import { CounterRegistry, type CountedEntity } from './counter.registry.js';
import { CounterDatabaseUnavailableError } from './exceptions/counter-database-unavailable.error.js';
import { CounterStoreUnavailableError } from './exceptions/counter-store-unavailable.error.js';
import type { ResolvedCounterOptions } from './interfaces/counter-module-options.interface.js';
import type { FlushReport } from './interfaces/flush-report.interface.js';
import { CounterKeys, type ShardKeys } from './redis/keys.js';
import { CounterStore, type BatchRow } from './redis/counter.store.js';
import { CounterDatabase, type DeltaBatch } from './sql/counter.database.js';

interface ShardWork {
  entity: CountedEntity;
  shard: number;
  keys: ShardKeys;
}

/**
 * Shards that may fail in one flush before it stops: failures past a few are almost always the
 * database being down, and each would wait out a connection timeout. A single poisoned shard still
 * lets the others through.
 */
const MAX_FAILED_SHARDS = 3;

/**
 * Writes Redis deltas into the database, shard by shard: lease and claim in one script, one transaction
 * with the ledger insert and one UPDATE, then the ack. A batch left behind by a crashed flusher is
 * finished by the next one: acknowledged if the ledger has it, applied otherwise.
 */
@Injectable()
export class CounterFlusher implements OnApplicationBootstrap {
  private readonly logger = new Logger('CounterFlusher');
  private lastPrunedAt = 0;
  /**
   * Whether this instance has seen every shard's generation key in place: only then does a missing one
   * mean that Redis lost data (and not that this is a new deployment).
   */
  private shardsMarked = false;
  /** The last generation seen per shard: it only grows, unless Redis lost the shard's data. */
  private readonly generations = new Map<string, number>();

  constructor(
    private readonly registry: CounterRegistry,
    private readonly store: CounterStore,
    private readonly keys: CounterKeys,
    private readonly database: CounterDatabase,
    private readonly health: CounterHealth,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {}

  /** Marks the shards, so that a later loss of Redis data can be told from a first start. */
  async onApplicationBootstrap(): Promise<void> {
    const shards = this.allShards().map((work) => work.keys);
    await this.store.markShards(shards).then(
      () => (this.shardsMarked = true),
      // Redis is down: the first flush that reaches it marks the shards instead.
      () => undefined,
    );
  }

  async flush(): Promise<FlushReport> {
    const started = performance.now();
    const report: FlushReport = {
      batches: 0,
      rows: 0,
      recoveredBatches: 0,
      droppedRows: 0,
      busyShards: 0,
      failedShards: 0,
      durationMs: 0,
    };
    // Each flush has its own token and its own random shard order, so instances spread over shards.
    const token = randomUUID();
    const lost = { shards: 0 };
    const queue = shuffle(this.allShards());
    const worker = async () => {
      // Redis gone, or a database that stopped answering: every other shard would fail (or wait) alike.
      const stopped = () =>
        report.error instanceof CounterStoreUnavailableError ||
        report.error instanceof CounterDatabaseUnavailableError ||
        report.failedShards >= MAX_FAILED_SHARDS;
      for (let work = queue.pop(); work && !stopped(); work = queue.pop()) {
        await this.flushShard(work, token, report, lost).catch(async (error: Error) => {
          report.failedShards++;
          report.error ??= error;
          await this.store.release(work.keys, token).catch(() => undefined);
        });
      }
    };
    await Promise.all(Array.from({ length: this.database.dialect.parallelTransactions }, worker));
    if (lost.shards > 0) this.health.redisDataLost(lost.shards);
    if (report.error) {
      this.health.flushFailed(report.error);
    } else {
      this.shardsMarked = true;
      this.health.flushSucceeded();
      await this.pruneLedger();
    }
    report.durationMs = performance.now() - started;
    return report;
  }

  private async flushShard(work: ShardWork, token: string, report: FlushReport, lost: { shards: number }): Promise<void> {
    for (let holding = false; ; holding = true) {
      // Read before sending: every generation recorded by now came from a reply to a command that Redis
      // ran before this claim, so the claim cannot see less unless Redis lost the shard's data. (A
      // generation recorded while the claim is in flight may be newer than what the claim saw.)
      const seenBefore = this.generations.get(work.keys.tag) ?? 0;
      const claim = await this.store.claim(work.keys, {
        counters: work.entity.counters.map((counter) => counter.name),
        token,
        leaseMs: this.options.flushLeaseMs,
        batchId: randomUUID(),
        limit: this.options.flushBatchSize,
        ttlSeconds: this.options.cleanRowTtlSeconds,
      });
      if (this.lostData(work, claim, seenBefore)) lost.shards++;
      if (claim.kind === 'busy') {
        report.busyShards++;
        return;
      }
      if (claim.kind === 'empty') {
        if (holding) await this.store.release(work.keys, token);
        return;
      }
      if (claim.rows.length > 0) {
        const missing = await this.apply(work, claim.batchId, claim.recovered, claim.counters, claim.rows, report);
        const acknowledged = await this.store.ack(work.keys, claim.batchId, token, !claim.more, missing);
        // The ack moved the generation on by one (others can only have moved it further).
        if (acknowledged) this.recordGeneration(work, claim.generation + 1);
      } else if (!claim.more) {
        await this.store.release(work.keys, token);
      }
      if (!claim.more) return;
    }
  }

  /** Whether the shard's state shows that Redis lost its data since this instance last looked. */
  private lostData(work: ShardWork, claim: { dataLost: boolean; generation: number }, seenBefore: number): boolean {
    const lost = (claim.dataLost && this.shardsMarked) || claim.generation < seenBefore;
    // After a loss the generation starts again from 0; otherwise it only grows, so a reply processed
    // late (after a concurrent flush of this instance recorded a newer one) must not lower it.
    if (lost) this.generations.set(work.keys.tag, claim.generation);
    else this.recordGeneration(work, claim.generation);
    return lost;
  }

  private recordGeneration(work: ShardWork, generation: number): void {
    this.generations.set(work.keys.tag, Math.max(generation, this.generations.get(work.keys.tag) ?? 0));
  }

  /** Writes one batch unless the ledger shows it was written; returns the encoded ids of deleted rows. */
  private async apply(
    work: ShardWork,
    batchId: string,
    recovered: boolean,
    counterNames: string[],
    claimed: BatchRow[],
    report: FlushReport,
  ): Promise<string[]> {
    if (recovered) report.recoveredBatches++;
    if (recovered && (await this.database.isBatchApplied(batchId))) return [];
    const { batch, encodedIdOf } = this.toDeltaBatch(work, batchId, counterNames, claimed);
    // Only counters removed from the entity since: nothing to write, the ack clears them.
    if (batch.rows.length === 0) return [];
    const outcome = await this.database.applyBatch(work.entity, batch);
    if (!outcome.applied) return [];
    report.batches++;
    report.rows += batch.rows.length - outcome.missingIds.length;
    if (outcome.missingIds.length === 0) return [];
    report.droppedRows += outcome.missingIds.length;
    this.logger.warn(MESSAGES.rowsDropped(work.entity.key, outcome.missingIds.map(String)));
    return outcome.missingIds.map((id) => encodedIdOf.get(String(id))!);
  }

  /**
   * The claimed rows as the database takes them: ids decoded, one delta per counter column, sorted by
   * id. A batch recovered after a deploy may name counters the entity no longer has: nothing is left to
   * write their deltas to.
   */
  private toDeltaBatch(work: ShardWork, batchId: string, counterNames: string[], claimed: BatchRow[]) {
    const { entity } = work;
    const columnOf = counterNames.map((name) => entity.counters.findIndex((counter) => counter.name === name));
    const counters = entity.counters.filter((_, index) => columnOf.includes(index));
    const rows: Array<{ id: string | number; deltas: number[] }> = [];
    const encodedIdOf = new Map<string, string>();
    for (const { encodedId, deltas } of claimed) {
      const row = counters.map(() => 0);
      deltas.forEach((delta, j) => {
        const column = counters.indexOf(entity.counters[columnOf[j]]);
        if (column >= 0) row[column] += delta;
      });
      if (row.every((delta) => delta === 0)) continue;
      const text = this.keys.decodeId(encodedId);
      const asNumber = Number(text);
      const id = entity.numericId && Number.isSafeInteger(asNumber) ? asNumber : text;
      rows.push({ id, deltas: row });
      encodedIdOf.set(String(id), encodedId);
    }
    // Only the columns the batch changes: a column without a delta would only cost the statement.
    const changed = counters.map((_, column) => rows.some((row) => row.deltas[column] !== 0));
    const sorted = rows
      .map((row) => ({ id: row.id, deltas: row.deltas.filter((_, column) => changed[column]) }))
      .sort((a, b) => compareIds(a.id, b.id));
    const batch: DeltaBatch = { batchId, shard: work.shard, counters: counters.filter((_, c) => changed[c]), rows: sorted };
    return { batch, encodedIdOf };
  }

  private allShards(): ShardWork[] {
    return this.registry
      .all()
      .flatMap((entity) => this.keys.shardsOf(entity.key).map((keys, shard) => ({ entity, shard, keys })));
  }

  private async pruneLedger(): Promise<void> {
    const every = Math.min(this.options.ledgerRetentionMs / 10, 3_600_000);
    if (Date.now() - this.lastPrunedAt < every) return;
    this.lastPrunedAt = Date.now();
    await this.database.pruneLedger(this.options.ledgerRetentionMs).catch((error: Error) =>
      this.logger.warn(`Pruning the counter ledger failed: ${error.message}`),
    );
  }
}

function compareIds(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
