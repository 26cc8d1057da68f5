import { randomUUID } from 'node:crypto';
import type { CountedEntity } from '../model/counted-entity.js';
import { CounterDatabaseUnavailableError } from '../exceptions/counter-database-unavailable.error.js';
import { CounterStoreUnavailableError } from '../exceptions/counter-store-unavailable.error.js';
import type { FlushReport } from '../interfaces/flush-report.interface.js';
import type { CounterKeys, ShardKeys } from '../redis/counter.keys.js';
import { ShardLease } from './shard.lease.js';

/** A shard one flush may work on. */
export interface FlushShard {
  entity: CountedEntity;
  /** The shard's number among its entity's. */
  index: number;
  keys: ShardKeys;
  /** The flush's hold on the shard's lease: it keeps it between the shard's batches. */
  lease: ShardLease;
  /** Rows its next claim is expected to give. */
  expectedRows: number;
}

/** Every shard of `entities`, none of their leases held yet. */
export function flushShardsOf(entities: CountedEntity[], keys: CounterKeys): FlushShard[] {
  return entities.flatMap((entity) =>
    keys.shardsOf(entity.key).map((shardKeys, index) => ({
      entity,
      index,
      keys: shardKeys,
      lease: new ShardLease(),
      expectedRows: 0,
    })),
  );
}

/** A lease a renewal is asked to extend, with the hold it was (see `ShardLease.lose`). */
export interface HeldLease {
  shard: FlushShard;
  hold: number;
}

/**
 * Shards that may fail in one flush before it stops: failures past a few are almost always the database
 * being down, and each would wait out a timeout. A single poisoned shard still lets the others through.
 */
const MAX_FAILED_SHARDS = 3;

/**
 * One flush, as its workers share it: its lease token, the shards left to claim, what it found lost, and
 * the report it builds (FlushReport, what `flush()` returns).
 */
export class FlushPass {
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
  shardsLeft: FlushShard[] = [];
  /** The shards with work. */
  private shards: FlushShard[] = [];
  /** Shards the backlog showed something waiting in. */
  shardsWithWork = 0;
  /** Shards whose data Redis lost, and their entities. */
  lostShards = 0;
  readonly lostEntities = new Set<CountedEntity>();
  /** The entities of lost shards whose generation key this flush made again (it saw the loss happen). */
  readonly keysMadeOf = new Set<CountedEntity>();
  /** Per entity, the shards the ledger shows flushed, read before this flush wrote any (see ShardsLostWhileDown). */
  readonly flushedShards = new Map<CountedEntity, Promise<Set<number>>>();
  private readonly started = performance.now();

  shardLost(entity: CountedEntity, keyMade: boolean): void {
    this.lostShards++;
    this.lostEntities.add(entity);
    if (keyMade) this.keysMadeOf.add(entity);
  }

  /** The shards with work, in a random order: each instance its own, so that instances spread over shards. */
  setShards(shards: FlushShard[]): void {
    this.shards = [...shards];
    this.shardsLeft = randomOrderByEntity(shards);
    this.shardsWithWork = shards.length;
  }

  /** The leases this flush holds. */
  heldLeases(): HeldLease[] {
    return this.shards.filter(({ lease }) => lease.held).map((shard) => ({ shard, hold: shard.lease.hold }));
  }

  /** A renewal found a lease gone: counted when it is lost by that (see `ShardLease.lose`). */
  renewalRefused({ shard, hold }: HeldLease): void {
    if (shard.lease.lose(hold)) this.report.lostLeases++;
  }

  /** Takes shards left until they are expected to give `rows` rows, at most `most` of them. */
  take(rows: number, most: number): FlushShard[] {
    const taken: FlushShard[] = [];
    for (let expected = 0; expected < rows && taken.length < most;) {
      const shard = this.shardsLeft.pop();
      if (!shard) break;
      taken.push(shard);
      expected += shard.expectedRows;
    }
    return taken;
  }

  /** A shard with rows left after a batch goes back, behind the others. */
  requeue(shard: FlushShard, expectedRows: number): void {
    shard.expectedRows = expectedRows;
    this.shardsLeft.unshift(shard);
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
function randomOrderByEntity(shards: FlushShard[]): FlushShard[] {
  const entityKeys = shuffle([...new Set(shards.map((shard) => shard.entity.key))]);
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
