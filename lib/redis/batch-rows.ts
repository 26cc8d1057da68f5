import { dumpedHashFields, forEachDumpedHashEntry, textOf, type DumpString } from './hash-dump.js';

/**
 * The rows of a claimed batch, column by column: row r's encoded id is `encodedIds[r]`, and its delta
 * for counter c (in the order of `ClaimRequest.counters`, 0 where it has none) `deltas[r * counters + c]`.
 * An encoded id is a number where the entity's ids are integers and its text is a safe integer's own
 * (`String(id)`); its text otherwise.
 */
export interface BatchRows {
  encodedIds: Array<string | number>;
  deltas: number[];
}

export interface ClaimedRows {
  rows: BatchRows;
  /** Field name and delta, over and over, of the batch's changes of counters not claimed for. */
  unknown: string[];
}

export const NO_BATCH_ROWS: ClaimedRows = Object.freeze({ rows: { encodedIds: [], deltas: [] }, unknown: [] });

/** A batch hash as the claim script gives it (its `DUMP`), or as `HGETALL` gives it (ioredis's object). */
export type BatchHash = { payload: Buffer } | { entries: Record<string, string> };

const HASH_SIGN = 35;
const SPACE = 32;
const MINUS = 45;
const ZERO = 48;
const NINE = 57;
/** Digits that always make a safe integer. */
const SAFE_DIGITS = 15;

/**
 * A claimed batch's rows, from its batch hash. A change's field is "<encoded id> <counter>" (encoded ids
 * are ASCII, and neither holds a space), its value the delta; the batch's own fields ('#…') and changes
 * that netted to zero are skipped. Changes of other counters than `counters` (added to the entity by a
 * newer deployment, or removed from it) come back as they came, field name and delta, for the flusher
 * to give back before it writes the batch. Read into flat arrays (see `BatchRows`).
 *
 * `numericIds`: the entity's ids are integers, so that an id of digits alone is read as a number, without
 * a string made of it (keys, in `BatchRows`, as numbers): on a flush into SQLite, Node's thread is the
 * limit, and this reading takes a fifth of it.
 *
 * Throws `UnreadableDumpError` for a payload this library does not read.
 */
export function batchRowsOf(hash: BatchHash, counters: string[], numericIds = false): ClaimedRows {
  // The names as the payload's characters hold them: their UTF-8 bytes, a character each.
  const names = counters.map(latin1Of);
  const width = counters.length;
  const rowOfText = new Map<string, number>();
  const rowOfNumber = new Map<number, number>();
  // Made at the size of a batch whose rows each change every counter, the usual one: grown one push at a
  // time instead, the arrays of a 520-row batch were copied nine times over (a fifth of a flush's garbage).
  const expectedRows = Math.ceil((('payload' in hash ? dumpedHashFields(hash.payload) : undefined) ?? 0) / width);
  const encodedIds: Array<string | number> = new Array(expectedRows);
  const deltas: number[] = new Array<number>(expectedRows * width).fill(0);
  let rows = 0;
  const unknown: string[] = [];
  const parsed: ParsedInteger = { value: 0 };
  const newRow = (encodedId: string | number): number => {
    if (rows >= expectedRows) for (let c = 0; c < width; c++) deltas.push(0);
    encodedIds[rows] = encodedId;
    return rows++;
  };
  // One map per kind of key, each always given keys of one type: the lookups stay on V8's fast paths.
  const rowOfId = (id: number): number => {
    let row = rowOfNumber.get(id);
    if (row === undefined) rowOfNumber.set(id, (row = newRow(id)));
    return row;
  };
  const rowOfEncodedId = (encodedId: string): number => {
    let row = rowOfText.get(encodedId);
    if (row === undefined) rowOfText.set(encodedId, (row = newRow(encodedId)));
    return row;
  };
  const add = (field: DumpString, value: DumpString) => {
    const delta = value.integer ?? Number(value.text.slice(value.start, value.end));
    const { text, start, end } = field;
    if (delta === 0 || field.integer !== undefined) {
      if (delta !== 0) unknown.push(textOf(field), textOf(value));
      return;
    }
    const numeric = numericIds ? integerBeforeSpace(text, start, end, parsed) : -1;
    if (numeric !== -1) {
      const column = columnOf(names, text, numeric + 1, end);
      if (column < 0) unknown.push(textOf(field), textOf(value));
      else deltas[rowOfId(parsed.value) * width + column] = delta;
      return;
    }
    if (text.charCodeAt(start) === HASH_SIGN) return;
    const space = text.indexOf(' ', start);
    const column = space < 0 || space >= end ? -1 : columnOf(names, text, space + 1, end);
    if (column < 0) {
      unknown.push(textOf(field), textOf(value));
      return;
    }
    deltas[rowOfEncodedId(text.slice(start, space)) * width + column] = delta;
  };
  if ('payload' in hash) forEachDumpedHashEntry(hash.payload, add);
  else forEachEntry(hash.entries, add);
  // Fewer rows than expected (counters without a change, the batch's own fields): the rest goes.
  encodedIds.length = rows;
  deltas.length = rows * width;
  return { rows: { encodedIds, deltas }, unknown };
}

interface ParsedInteger {
  value: number;
}

/**
 * Where the space is after a safe integer's own text (`String(n)`: no leading zero, no '-0', at most 15
 * digits) at `start`, with the integer put in `into` (one object for a whole batch: no allocation per
 * field); -1 where the text there is anything else.
 */
function integerBeforeSpace(text: string, start: number, end: number, into: ParsedInteger): number {
  const negative = text.charCodeAt(start) === MINUS;
  const first = negative ? start + 1 : start;
  let value = 0;
  let at = first;
  for (; at < end; at++) {
    const code = text.charCodeAt(at);
    if (code < ZERO || code > NINE) break;
    value = value * 10 + (code - ZERO);
  }
  const digits = at - first;
  if (at >= end || text.charCodeAt(at) !== SPACE || digits === 0 || digits > SAFE_DIGITS) return -1;
  if (text.charCodeAt(first) === ZERO && (digits > 1 || negative)) return -1;
  into.value = negative ? -value : value;
  return at;
}

/** `HGETALL`'s entries as a DUMP payload's strings: UTF-8 bytes, a Latin-1 character each. */
function forEachEntry(entries: Record<string, string>, visit: (field: DumpString, value: DumpString) => void): void {
  const field: DumpString = { text: '', start: 0, end: 0, integer: undefined };
  const value: DumpString = { text: '', start: 0, end: 0, integer: undefined };
  for (const [name, delta] of Object.entries(entries)) {
    field.text = latin1Of(name);
    field.end = field.text.length;
    value.text = delta;
    value.end = delta.length;
    visit(field, value);
  }
}

function latin1Of(text: string): string {
  return Buffer.from(text).toString('latin1');
}

/**
 * The position in `names` of the name `text` holds from `start` to `end` (exclusive); -1 if none.
 * Compared character by character: `startsWith` at an offset took half the parsing time of a claim's
 * reply (1.2 against 0.6 µs per row of three counters, measured alone).
 */
function columnOf(names: string[], text: string, start: number, end: number): number {
  next: for (let c = 0; c < names.length; c++) {
    const name = names[c];
    if (name.length !== end - start) continue;
    for (let i = 0; i < name.length; i++) if (name.charCodeAt(i) !== text.charCodeAt(start + i)) continue next;
    return c;
  }
  return -1;
}
