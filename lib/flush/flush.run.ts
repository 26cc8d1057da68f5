import { randomUUID } from 'node:crypto';
import type { CountedEntity } from '../model/counted-entity.js';
import { CounterDatabaseUnavailableError } from '../exceptions/counter-database-unavailable.error.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';
import type { ShardKeys } from '../redis/counter.keys.js';

/** A shard a flush works on. */
export interface ShardWork {
  entity: CountedEntity;
  shard: number;
  keys: ShardKeys;
  /** Whether this flush holds the shard's lease (it keeps it between the shard's batches). */
  holding: boolean;
  /** Rows its next claim is expected to give. */
  expectedRows: number;
  /** Whether the lease this flush took ran out under it (see LeaseKeeper): nothing more of it is done. */
  leaseLost: boolean;
  /** Claims that took the shard's lease: tells a renewal's reply about an older lease from the current one. */
  leases: number;
}

/** A shard whose lease a renewal is asked to extend, with the lease it was. */
export interface HeldShard {
  work: ShardWork;
  lease: number;
}

/**
 * Shards that may fail in one flush before it stops: failures past a few are almost always the database
 * being down, and each would wait out a timeout. A single poisoned shard still lets the others through.
 */
const MAX_FAILED_SHARDS = 3;

/** What one flush shares between its workers: its lease token, the shards left, and its report. */
export class FlushRun {
  /** The flush's own lease token. */
  readonly token = randomUUID();
  readonly report: FlushReport = {
    batches: 0,
    rows: 0,
    recoveredBatches: 0,
    droppedRows: 0,
    busyShards: 0,
    lostLeases: 0,
    failedShards: 0,
    durationMs: 0,
  };
  /**
   * Shards left to claim, taken from the end; a shard with rows left after a batch goes back in at the
   * front, so every other shard gets its turn first.
   */
  shardsLeft: ShardWork[] = [];
  /** Every shard this flush may work on. */
  private shards: ShardWork[] = [];
  /** Shards the backlog showed something waiting in. */
  shardsWithWork = 0;
  /** Shards whose data Redis lost, and their entities. */
  lostShards = 0;
  readonly lostEntities = new Set<CountedEntity>();
  /** The entities of lost shards whose generation key this flush made again (it saw the loss happen). */
  readonly keysMadeOf = new Set<CountedEntity>();
  /** Per entity, the shards the ledger shows flushed, read before this flush wrote any (see the flusher). */
  readonly flushedShards = new Map<CountedEntity, Promise<Set<number>>>();
  private readonly started = performance.now();

  shardLost(entity: CountedEntity, keyMade: boolean): void {
    this.lostShards++;
    this.lostEntities.add(entity);
    if (keyMade) this.keysMadeOf.add(entity);
  }

  /** The shards with work, in a random order: each instance its own, so that instances spread over shards. */
  setShards(shards: ShardWork[]): void {
    this.shards = [...shards];
    this.shardsLeft = randomOrderByEntity(shards);
    this.shardsWithWork = shards.length;
  }

  /** A claim took the shard's lease. */
  leaseTaken(work: ShardWork): void {
    work.holding = true;
    work.leaseLost = false;
    work.leases++;
  }

  /** The shards whose lease this flush holds. */
  heldShards(): HeldShard[] {
    return this.shards.filter((work) => work.holding).map((work) => ({ work, lease: work.leases }));
  }

  /** A renewal found the lease gone: unless the flush has let it go or taken it again since, it is lost. */
  leaseLost({ work, lease }: HeldShard): void {
    if (!work.holding || work.leases !== lease) return;
    work.holding = false;
    work.leaseLost = true;
    this.report.lostLeases++;
  }

  /** Takes shards left until they are expected to give `rows` rows, at most `most` of them. */
  take(rows: number, most: number): ShardWork[] {
    const taken: ShardWork[] = [];
    for (let expected = 0; expected < rows && taken.length < most;) {
      const work = this.shardsLeft.pop();
      if (!work) break;
      taken.push(work);
      expected += work.expectedRows;
    }
    return taken;
  }

  /** A shard with rows left after a batch goes back, behind the others. */
  requeue(work: ShardWork, expectedRows: number): void {
    work.expectedRows = expectedRows;
    this.shardsLeft.unshift(work);
  }

  /** A batch of `rows` rows was written, `missing` of them deleted from the database meanwhile. */
  written(rows: number, missing: number): void {
    this.report.batches++;
    this.report.rows += rows - missing;
    this.report.droppedRows += missing;
  }

  shardFailed(error: Error): void {
    this.report.failedShards++;
    this.report.error ??= error;
  }

  /** Redis gone, or a database that stopped answering: every other shard would fail (or wait) alike. */
  stopped(): boolean {
    const { error, failedShards } = this.report;
    return (
      error instanceof CounterStoreUnavailableError ||
      error instanceof CounterDatabaseUnavailableError ||
      failedShards >= MAX_FAILED_SHARDS
    );
  }

  done(): FlushReport {
    this.report.durationMs = performance.now() - this.started;
    return this.report;
  }
}

/**
 * The shards in a random order, but each entity's together, so that a transaction mostly holds batches
 * of one table: its rows then go into the database in fewer, larger statements.
 */
function randomOrderByEntity(shards: ShardWork[]): ShardWork[] {
  const entityKeys = shuffle([...new Set(shards.map((work) => work.entity.key))]);
  const rank = new Map(entityKeys.map((key, at) => [key, at]));
  // A stable sort: each entity's shards keep their random order.
  return shuffle(shards).sort((a, b) => rank.get(a.entity.key)! - rank.get(b.entity.key)!);
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
