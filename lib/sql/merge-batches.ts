import type { CounterField } from '../counter.registry.js';
import type { DeltaRows } from './counter-dialect.js';
import type { DeltaBatch } from './counter.database.js';

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
  const order = Array.from({ length: total }, (_, place) => place).sort((a, b) => compareIds(ids[a], ids[b]));
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

/** Ids (and entity keys) in the order a transaction writes them: numbers by value, anything else as text. */
export function compareIds(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}
