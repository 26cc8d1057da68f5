import type { CountedEntity } from '../model/counted-entity.js';
import type { DeltaBatch } from '../model/delta-batch.js';
import type { BatchRows } from '../redis/claim/claimed-batch.reader.js';
import type { CounterKeys } from '../redis/counter.keys.js';
import type { FlushShard } from './flush.pass.js';

/**
 * A batch this flush claimed from a shard, until it is acknowledged: its rows as the database takes them,
 * and what Redis needs of it (its shard, the generation it was claimed at, how to name its rows there).
 */
export interface ClaimedBatch {
  shard: FlushShard;
  batch: DeltaBatch;
  /** The encoded id (as in Redis) of each row id (as in the database) whose text differs from it. */
  encodedIdOf: Map<string, string>;
  /** The shard's generation when claimed. */
  generation: number;
  /** Rows of the shard still dirty: when there are some, it goes back among the shards left after the ack. */
  moreRows: number;
  /** Left behind by a flusher that did not acknowledge it: the ledger may have it already. */
  recovered: boolean;
  /** Changes of counters this instance does not know, to give back before the write; none once given back. */
  unknown: string[];
}

/** A batch the database has, with the ids of its rows that no longer exist there. */
export interface WrittenBatch {
  claimed: ClaimedBatch;
  missingIds: Array<string | number>;
}

/** The encoded ids (as in Redis) of rows of a batch, given by their ids as in the database. */
export function encodedIdsOf({ encodedIdOf }: ClaimedBatch, ids: Array<string | number>): string[] {
  return ids.map((id) => encodedIdOf.get(String(id)) ?? String(id));
}

/**
 * A claimed batch's rows as a batch for the database: ids decoded (integer ids as numbers where they are
 * safe integers), and only the counters some row changes, as a column the statement does not change
 * would only cost it.
 */
export function toDeltaBatch(
  keys: CounterKeys,
  entity: CountedEntity,
  shard: number,
  batchId: string,
  claimed: BatchRows,
): Pick<ClaimedBatch, 'batch' | 'encodedIdOf'> {
  const { counters } = entity;
  const width = counters.length;
  const encodedIdOf = new Map<string, string>();
  const ids = claimed.encodedIds.map((encodedId) => {
    const id = idOf(keys, entity, encodedId);
    if (id !== encodedId && String(id) !== encodedId) encodedIdOf.set(String(id), String(encodedId));
    return id;
  });
  const { deltas, buckets } = claimed;
  // A counter whose buckets changed is written too (adding 0 where its total did not), so that the UPDATE
  // finds the rows that no longer exist, whose buckets are then left out.
  const bucketColumns = new Set(buckets?.columns);
  const changed = counters.flatMap((_, c) =>
    bucketColumns.has(c) || ids.some((__, row) => deltas[row * width + c] !== 0) ? [c] : [],
  );
  const batch: DeltaBatch = {
    batchId,
    entity,
    shard,
    counters: changed.map((c) => counters[c]),
    rows: {
      ids,
      deltas: changed.length === width ? deltas : ids.flatMap((_, row) => changed.map((c) => deltas[row * width + c])),
    },
  };
  if (buckets) {
    batch.buckets = {
      ids: buckets.rows.map((row) => ids[row]),
      counters: buckets.columns.map((c) => counters[c]),
      granularities: buckets.granularities,
      starts: buckets.starts,
      deltas: buckets.deltas,
    };
  }
  return { batch, encodedIdOf };
}

/**
 * A row's id as the database takes it, from its encoded id: an integer key is kept in Redis as its
 * canonical text (see row-id.ts), bound as a number where it is a safe integer.
 */
function idOf(keys: CounterKeys, entity: CountedEntity, encodedId: string | number): string | number {
  if (typeof encodedId === 'number') return encodedId;
  if (!entity.numericId) return keys.decodeId(encodedId);
  const asNumber = Number(encodedId);
  return Number.isSafeInteger(asNumber) ? asNumber : encodedId;
}
