import type { CounterField } from '../counter.registry.js';
import type { DeltaRows } from './counter-dialect.js';
import type { DeltaBatch } from './counter.database.js';

/**
 * One entity's batches as one set of rows sorted by id, with a column for every counter any batch
 * changes (0 where a batch does not change it), and the batch (its index in `batches`) of each row.
 * Batches of one transaction come from distinct shards, so no row is in two of them.
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
  const sources = batches.map((batch) => batch.rows.deltas);
  const columnsOf = batches.map((batch) => batch.counters.map((counter) => counters.indexOf(counter)));
  // A typed array, zeroed as it is made: the deltas of a transaction of 8,000 rows of three counters
  // are 192 KB, past the size from which V8 puts an array in its large-object space, and an array made
  // so and filled with zeros cost 24 ns per row (a Float64Array 4). A merge of 8,000 rows of three counters
  // from 15 batches took 93-101 ns per row with it, against 117-124 (measured alone, three runs of each in
  // turns, 2026-11-24).
  const rows: DeltaRows = { ids: new Array(total), deltas: new Float64Array(total * width) };
  const batchOfRow: number[] = new Array(total);
  for (let sorted = 0; sorted < total; sorted++) {
    const place = order[sorted];
    const b = batchOf[place];
    const columns = columnsOf[b];
    const source = sources[b];
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
 * number per row, by the typed array's own numeric sort: a sort that calls back to compare cost more
 * than the rest of a merge (two batches of 520 rows, merge measured alone: 0.35 against 0.13 µs per
 * row). The key is (id - smallest id) × 2^b + place, b the bits of the largest place: in 32 bits where
 * the ids span little enough (2^32 ÷ the places rounded up to a power of two: ids up to a million apart
 * in a transaction of 4,000 rows, half a million in one of 8,000), else in a double, exact below 2^53.
 * V8 sorts a Uint32Array about four times faster than a Float64Array (1,330 keys: 11–13 against 52–53
 * ns per key, measured alone), and from RADIX_SORT_FROM keys on the 32-bit keys go through a radix
 * sort, faster still (see `radixSorted`). Other ids go through `compareIds`.
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
  const sortedKeys =
    narrow && count >= RADIX_SORT_FROM
      ? radixSorted(keys as Uint32Array, Math.ceil(Math.log2((span.largest - span.smallest + 1) * placeSpan)))
      : keys.sort();
  const order = new Uint32Array(count);
  // The place is the key's low bits: the remainder of a division by a power of two, exact in a double.
  for (let sorted = 0; sorted < count; sorted++) {
    const key = sortedKeys[sorted];
    order[sorted] = key - Math.floor(key / placeSpan) * placeSpan;
  }
  return order;
}

/** Keys from which `radixSorted` beats the typed array's own sort (see there). */
const RADIX_SORT_FROM = 1_024;
const RADIX_BITS = 11;

/**
 * 32-bit keys below 2^bits in ascending order, in passes of 11 bits (least significant first), each a
 * count of the keys per digit and a stable scatter into a second array. V8's own sort of a Uint32Array
 * took 26-38 ns per key for 1,000 to 16,000 keys in random order (the merges of a 100,000-row SQLite
 * flush spent 4.2-4.7 ms in it), this 10-14 ns; at 500 keys the two were even, the fixed cost of this
 * one (2,048 digits counted per pass) outweighing its gain (measured alone, 2026-11-24).
 * Returns `keys` or the second array, whichever holds the result.
 */
function radixSorted(keys: Uint32Array, bits: number): Uint32Array {
  let from: Uint32Array = keys;
  let to: Uint32Array = new Uint32Array(keys.length);
  const starts = new Uint32Array(1 << RADIX_BITS);
  const mask = (1 << RADIX_BITS) - 1;
  for (let shift = 0; shift < bits; shift += RADIX_BITS) {
    starts.fill(0);
    for (let i = 0; i < from.length; i++) starts[(from[i] >>> shift) & mask]++;
    for (let digit = 0, start = 0; digit <= mask; digit++) {
      const keysOfDigit = starts[digit];
      starts[digit] = start;
      start += keysOfDigit;
    }
    for (let i = 0; i < from.length; i++) to[starts[(from[i] >>> shift) & mask]++] = from[i];
    [from, to] = [to, from];
  }
  return from;
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
