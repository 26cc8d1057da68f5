import type { CounterField } from '../model/counted-entity.js';
import type { DeltaBatch, DeltaRows } from '../model/delta-batch.js';

/**
 * One entity's batches as one set of rows sorted by id (so that two flushers lock rows in one order),
 * with a column for every counter any batch changes (0 where a batch does not change it), and the batch
 * (its index in `batches`) of each row. Batches of one transaction come from distinct shards, so no row
 * is in two of them.
 */
export function mergeBatches(batches: DeltaBatch[]): {
  counters: CounterField[];
  rows: DeltaRows;
  batchOfRow: number[];
} {
  const same = batches.every((batch) => batch.counters === batches[0].counters);
  const counters = same
    ? batches[0].counters
    : batches[0].entity.counters.filter((counter) => batches.some((batch) => batch.counters.includes(counter)));
  const width = counters.length;
  // Every row as a place (its batch, and its row there), in the order the batches give them.
  let total = 0;
  for (const batch of batches) total += batch.rows.ids.length;
  const ids: Array<string | number> = new Array(total);
  const batchOf = new Uint32Array(total);
  const rowOf = new Uint32Array(total);
  for (let b = 0, place = 0; b < batches.length; b++) {
    const batchIds = batches[b].rows.ids;
    for (let r = 0; r < batchIds.length; r++, place++) {
      ids[place] = batchIds[r];
      batchOf[place] = b;
      rowOf[place] = r;
    }
  }
  const order = sortedPlaces(ids);
  const columnsOf = batches.map((batch) => batch.counters.map((counter) => counters.indexOf(counter)));
  const rows: DeltaRows = { ids: new Array(total), deltas: new Float64Array(total * width) };
  const batchOfRow: number[] = new Array(total);
  for (let sorted = 0; sorted < total; sorted++) {
    const place = order[sorted];
    const b = batchOf[place];
    const columns = columnsOf[b];
    const source = batches[b].rows.deltas;
    const first = rowOf[place] * columns.length;
    rows.ids[sorted] = ids[place];
    for (let c = 0; c < columns.length; c++) rows.deltas[sorted * width + columns[c]] = source[first + c];
    batchOfRow[sorted] = b;
  }
  return { counters, rows, batchOfRow };
}

/** Places per transaction, and largest magnitude of an integer id, that `sortedPlaces` packs in a key. */
const PACKED_PLACES = 2 ** 20;
const PACKED_IDS = 2 ** 32;

/**
 * The places of `ids` in id order. Integer ids below 2^32 in magnitude (most keys) are sorted as one
 * number per row, (id - smallest id) × 2^b + place (b the bits of the largest place), by a typed array's
 * own numeric sort, in 32 bits where the ids span little enough and in a double otherwise (exact below
 * 2^53): a sort that calls back to compare costs more (see docs/PERFORMANCE.md, "Flush
 * tunings"). Other ids go through `compareIds`.
 */
function sortedPlaces(ids: Array<string | number>): ArrayLike<number> {
  const count = ids.length;
  const span = integerSpan(ids);
  if (span === undefined || count >= PACKED_PLACES) {
    return Array.from({ length: count }, (_, place) => place).sort((a, b) => compareIds(ids[a], ids[b]));
  }
  const placeSpan = 2 ** Math.ceil(Math.log2(Math.max(count, 2)));
  const narrow = (span.largest - span.smallest + 1) * placeSpan <= 2 ** 32;
  const keys = narrow ? new Uint32Array(count) : new Float64Array(count);
  const base = narrow ? span.smallest : -PACKED_IDS;
  for (let place = 0; place < count; place++) keys[place] = ((ids[place] as number) - base) * placeSpan + place;
  keys.sort();
  const order = new Uint32Array(count);
  // The place is the key's low bits: the remainder of a division by a power of two, exact in a double.
  for (let sorted = 0; sorted < count; sorted++) order[sorted] = keys[sorted] % placeSpan;
  return order;
}

/** The smallest and largest of `ids` when all are integers below 2^32 in magnitude; undefined otherwise. */
function integerSpan(ids: Array<string | number>): { smallest: number; largest: number } | undefined {
  let smallest = Number.POSITIVE_INFINITY;
  let largest = Number.NEGATIVE_INFINITY;
  for (const id of ids) {
    if (typeof id !== 'number' || !Number.isInteger(id) || Math.abs(id) >= PACKED_IDS) return undefined;
    if (id < smallest) smallest = id;
    if (id > largest) largest = id;
  }
  return { smallest, largest };
}

/** Ids (and entity keys) in the order a transaction writes them: numbers by value, anything else as text. */
export function compareIds(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}
