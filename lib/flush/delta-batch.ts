import type { CountedEntity } from '../model/counted-entity.js';
import type { CounterKeys } from '../redis/counter.keys.js';
import type { BatchRows } from '../redis/claim/claimed-batch.reader.js';
import type { DeltaBatch } from '../model/delta-batch.js';

/** A claimed batch as the database takes it, and what its acknowledgement needs to name its rows in Redis. */
export interface ConvertedBatch {
  batch: DeltaBatch;
  /** The encoded id (as in Redis) of each row id (as in the database) whose text differs from it. */
  encodedIdOf: Map<string, string>;
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
): ConvertedBatch {
  const { counters } = entity;
  const width = counters.length;
  const encodedIdOf = new Map<string, string>();
  const ids = claimed.encodedIds.map((encodedId) => {
    const id = idOf(keys, entity, encodedId);
    if (id !== encodedId && String(id) !== encodedId) encodedIdOf.set(String(id), String(encodedId));
    return id;
  });
  const { deltas } = claimed;
  const changed = counters.flatMap((_, c) => (ids.some((__, row) => deltas[row * width + c] !== 0) ? [c] : []));
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
