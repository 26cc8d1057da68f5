import {
  dumpedHashFields,
  emptyDumpString,
  forEachDumpedHashEntry,
  textOf,
  type DumpString,
  type HashEntryVisitor,
} from './hash-dump.js';
import { IntegerRowIndex } from './integer-row-index.js';

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
  // Made at the size of a batch whose rows each change every counter, the usual one: grown one push at a
  // time instead, the arrays of a 520-row batch were copied nine times over (a fifth of a flush's garbage).
  const expectedRows = Math.ceil(
    (('payload' in hash ? dumpedHashFields(hash.payload) : undefined) ?? 0) / counters.length,
  );
  const reader = new BatchReader(counterNamesOf(counters), numericIds, expectedRows);
  if ('payload' in hash) forEachDumpedHashEntry(hash.payload, reader);
  else forEachEntry(hash.entries, reader);
  return reader.claimed();
}

/**
 * The CounterNames of each array of counters a claim named, made once: the flusher names an entity's own
 * array every time. Made for each claim, its `map` was compiled into the claim's code, which V8 threw
 * away and compiled again when an array of another shape came (see `CounterStore.claim`).
 */
const counterNamesByArray = new WeakMap<string[], CounterNames>();

function counterNamesOf(counters: string[]): CounterNames {
  let names = counterNamesByArray.get(counters);
  if (names === undefined) counterNamesByArray.set(counters, (names = new CounterNames(counters)));
  return names;
}

/**
 * Puts a batch's changes in rows, one entry at a time. A class, not closures made for each claim: V8
 * kept compiling those closures again (100,000-row SQLite flushes in a row, `--trace-opt`: the
 * entry closure was compiled by TurboFan in four of the five flushes after the first, and ran
 * unoptimized until then), these methods in two of the six after the first (one of them after a
 * deoptimization).
 */
class BatchReader implements HashEntryVisitor {
  private readonly width: number;
  private readonly encodedIds: Array<string | number>;
  private readonly deltas: number[];
  private rows = 0;
  private readonly unknown: string[] = [];
  private readonly parsed: ParsedInteger = { value: 0 };
  /** Only an integer entity's claims look rows up by number: no table for the others. */
  private readonly rowOfNumber: IntegerRowIndex | undefined;
  private readonly rowOfText = new Map<string, number>();

  constructor(
    private readonly names: CounterNames,
    private readonly numericIds: boolean,
    private readonly expectedRows: number,
  ) {
    this.width = names.count;
    this.encodedIds = new Array(expectedRows);
    this.deltas = new Array<number>(expectedRows * this.width).fill(0);
    this.rowOfNumber = numericIds ? new IntegerRowIndex(expectedRows) : undefined;
  }

  entry(field: DumpString, value: DumpString): void {
    const delta = value.integer ?? Number(value.bytes.toString('latin1', value.start, value.end));
    const { bytes, start, end } = field;
    if (delta === 0 || field.integer !== undefined) {
      if (delta !== 0) this.unknown.push(textOf(field), textOf(value));
      return;
    }
    const numeric = this.numericIds ? integerBeforeSpace(bytes, start, end, this.parsed) : -1;
    if (numeric !== -1) {
      const column = this.names.columnOf(bytes, numeric + 1, end);
      if (column < 0) this.unknown.push(textOf(field), textOf(value));
      else this.deltas[this.rowOfId(this.parsed.value) * this.width + column] = delta;
      return;
    }
    if (bytes[start] === HASH_SIGN) return;
    const space = spaceIn(bytes, start, end);
    const column = space < 0 ? -1 : this.names.columnOf(bytes, space + 1, end);
    if (column < 0) {
      this.unknown.push(textOf(field), textOf(value));
      return;
    }
    // Encoded ids are ASCII: a byte is a character.
    this.deltas[this.rowOfEncodedId(bytes.toString('latin1', start, space)) * this.width + column] = delta;
  }

  /** The rows read, and the changes of other counters. */
  claimed(): ClaimedRows {
    const { encodedIds, deltas, rows, width } = this;
    // Fewer rows than expected (counters without a change, the batch's own fields): the rest goes.
    encodedIds.length = rows;
    deltas.length = rows * width;
    return { rows: { encodedIds, deltas }, unknown: this.unknown };
  }

  private rowOfId(id: number): number {
    const row = this.rowOfNumber!.rowOf(id, this.rows);
    if (row === this.rows) this.newRow(id);
    return row;
  }

  private rowOfEncodedId(encodedId: string): number {
    let row = this.rowOfText.get(encodedId);
    if (row === undefined) this.rowOfText.set(encodedId, (row = this.newRow(encodedId)));
    return row;
  }

  private newRow(encodedId: string | number): number {
    if (this.rows >= this.expectedRows) for (let c = 0; c < this.width; c++) this.deltas.push(0);
    this.encodedIds[this.rows] = encodedId;
    return this.rows++;
  }
}

interface ParsedInteger {
  value: number;
}

/**
 * Where the space is after a safe integer's own text (`String(n)`: no leading zero, no '-0', at most 15
 * digits) at `start`, with the integer put in `into` (one object for a whole batch: no allocation per
 * field); -1 where the bytes there are anything else.
 */
function integerBeforeSpace(bytes: Buffer, start: number, end: number, into: ParsedInteger): number {
  const negative = bytes[start] === MINUS;
  const first = negative ? start + 1 : start;
  let value = 0;
  let at = first;
  for (; at < end; at++) {
    const code = bytes[at];
    if (code < ZERO || code > NINE) break;
    value = value * 10 + (code - ZERO);
  }
  const digits = at - first;
  if (at >= end || bytes[at] !== SPACE || digits === 0 || digits > SAFE_DIGITS) return -1;
  if (bytes[first] === ZERO && (digits > 1 || negative)) return -1;
  into.value = negative ? -value : value;
  return at;
}

/** The first space from `start` to `end` (exclusive); -1 if none. */
function spaceIn(bytes: Buffer, start: number, end: number): number {
  for (let at = start; at < end; at++) if (bytes[at] === SPACE) return at;
  return -1;
}

/** `HGETALL`'s entries as a DUMP payload's strings: their UTF-8 bytes. */
function forEachEntry(entries: Record<string, string>, visitor: HashEntryVisitor): void {
  const field = emptyDumpString(Buffer.alloc(0));
  const value = emptyDumpString(Buffer.alloc(0));
  for (const [name, delta] of Object.entries(entries)) {
    field.bytes = Buffer.from(name);
    field.end = field.bytes.length;
    value.bytes = Buffer.from(delta);
    value.end = value.bytes.length;
    visitor.entry(field, value);
  }
}

/**
 * The counters' names as a claim's fields hold them (their UTF-8 bytes), and which of them the end of a
 * field names.
 *
 * A name's length and first and last bytes pick the one name it can be (from a table of 256), which is
 * then compared whole; names that share a slot are compared one by one. Comparing every name in turn
 * cost more than the rest of reading a field (fields come in hash order, so which name matches is a
 * coin toss for the CPU's branch predictor).
 */
class CounterNames {
  private readonly names: Buffer[];
  /** Slot → the position of the only name there; -1 for none, -2 for several. */
  private readonly candidates = new Int8Array(256).fill(-1);

  constructor(counters: string[]) {
    this.names = counters.map((counter) => Buffer.from(counter));
    this.names.forEach((name, c) => {
      if (name.length === 0) return;
      const slot = CounterNames.slotOf(name, 0, name.length);
      this.candidates[slot] = this.candidates[slot] === -1 && c < 127 ? c : -2;
    });
  }

  get count(): number {
    return this.names.length;
  }

  /** The position of the name `bytes` hold from `start` to `end` (exclusive); -1 if none. */
  columnOf(bytes: Buffer, start: number, end: number): number {
    if (end <= start) return -1;
    const candidate = this.candidates[CounterNames.slotOf(bytes, start, end)];
    if (candidate >= 0) return CounterNames.holds(bytes, start, end, this.names[candidate]) ? candidate : -1;
    if (candidate === -1) return -1;
    for (let c = 0; c < this.names.length; c++) if (CounterNames.holds(bytes, start, end, this.names[c])) return c;
    return -1;
  }

  private static slotOf(bytes: Buffer, start: number, end: number): number {
    return ((end - start) * 31 + bytes[start] * 7 + bytes[end - 1]) & 0xff;
  }

  /**
   * Compared byte by byte here rather than with `Buffer#compare`, whose call into C++ cost more than the
   * comparison: 46 against 15 ns per 13-byte name that matches (measured alone).
   */
  private static holds(bytes: Buffer, start: number, end: number, name: Buffer): boolean {
    if (name.length !== end - start) return false;
    for (let i = 0; i < name.length; i++) if (name[i] !== bytes[start + i]) return false;
    return true;
  }
}
