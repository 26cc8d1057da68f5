import { GRANULARITIES, GRANULARITY_CODE, type Granularity } from '../../model/time-bucket.js';
import { emptyString, readDumpedHash, textOf, type DumpString } from './dumped-hash.parser.js';

/**
 * A claimed batch's rows: row r's encoded id is `encodedIds[r]`, its delta of counter c (in the order
 * of the counters claimed for) `deltas[r * counters + c]`, 0 where it has none. An encoded id is a number
 * where the entity's ids are integers and its text is a safe integer's own (`String(id)`).
 */
export interface BatchRows {
  encodedIds: Array<string | number>;
  deltas: number[];
  /** The changes of windowed counters' buckets, if any; a row may have some and no change of its totals. */
  buckets?: BatchBuckets;
}

/**
 * Bucket changes, one per place: place b adds `deltas[b]` to row `rows[b]`'s counter `columns[b]` (in the
 * order of the counters claimed for), in its bucket of `granularities[b]` starting at `starts[b]` (Unix
 * seconds).
 */
export interface BatchBuckets {
  rows: number[];
  columns: number[];
  granularities: Granularity[];
  starts: number[];
  deltas: number[];
}

export interface ClaimedRows {
  rows: BatchRows;
  /** Field name and delta, over and over, of the batch's changes of counters not claimed for. */
  unknown: string[];
}

/** A batch hash as the claim gives it (its `DUMP` payload), or as `HGETALL` gives it. */
export type BatchHash = { payload: Buffer } | { entries: Record<string, string> };

const HASH_SIGN = 0x23;
const AT_SIGN = 0x40;
const SPACE = 0x20;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
/** Digits that always make a safe integer. */
const SAFE_DIGITS = 15;

/**
 * A claimed batch's rows (claim.lua.ts). A change's field is "<encoded id> <counter>" (encoded ids are
 * ASCII, and neither holds a space), its value the delta; a bucket's is "<encoded id> <counter>@<letter>
 * <start>" (buckets.lua.ts, no space before the start). The batch's own fields ('#…') and changes that
 * netted to zero are skipped. `counters` are the counters claimed for as the claim script takes them
 * (`view_count@h` for a windowed one, see CounterField.scriptName). Changes of other counters, and
 * buckets of a granularity their counter does not keep here, come back as they came, for the flusher to
 * give back (give-back.lua.ts). Fields are read as bytes, an integer id as a number, without
 * making a string of either. Throws `UnreadableDumpError` for a payload the parser does not read.
 */
export function readClaimedBatch(hash: BatchHash, counters: string[], numericIds: boolean): ClaimedRows {
  const reader = new BatchReader(counters, numericIds);
  if ('payload' in hash) readDumpedHash(hash.payload, reader.entry);
  else readEntries(hash.entries, reader.entry);
  return reader.claimed();
}

/** Puts a batch's changes in rows, one entry at a time. */
class BatchReader {
  private readonly names: Buffer[];
  /** Per counter, by the letter's code, the granularity of its buckets it keeps. */
  private readonly windows: Array<Map<number, Granularity>>;
  private readonly windowed: boolean;
  private readonly rows: BatchRows = { encodedIds: [], deltas: [] };
  private readonly unknown: string[] = [];
  private readonly rowOfNumber = new Map<number, number>();
  private readonly rowOfText = new Map<string, number>();

  constructor(
    counters: string[],
    private readonly numericIds: boolean,
  ) {
    const [names, windows] = [counters.map((counter) => counter.split('@')[0]), counters.map(windowsOf)];
    this.names = names.map((name) => Buffer.from(name));
    this.windows = windows;
    this.windowed = windows.some((granularities) => granularities.size > 0);
  }

  readonly entry = (field: DumpString, value: DumpString): void => {
    const delta = value.integer ?? Number(value.bytes.toString('latin1', value.start, value.end));
    const { bytes, start, end } = field;
    if (delta === 0 || (field.integer === undefined && bytes[start] === HASH_SIGN)) return;
    const space = field.integer === undefined ? spaceIn(bytes, start, end) : -1;
    // Only an instance that keeps buckets looks for them: to the others a bucket is an unknown counter's.
    const at = space >= 0 && this.windowed ? byteIn(bytes, AT_SIGN, space + 1, end) : -1;
    const column = space < 0 ? -1 : this.columnOf(bytes, space + 1, at < 0 ? end : at);
    const granularity = at < 0 || column < 0 ? undefined : this.windows[column].get(bytes[at + 1]);
    const bucketStart = granularity === undefined ? undefined : safeIntegerText(bytes, at + 2, end);
    if (column < 0 || (at >= 0 && bucketStart === undefined)) {
      this.unknown.push(textOf(field), textOf(value));
      return;
    }
    const id = this.numericIds ? safeIntegerText(bytes, start, space) : undefined;
    const row = id === undefined ? this.rowOfEncodedId(bytes.toString('latin1', start, space)) : this.rowOfId(id);
    if (bucketStart === undefined) {
      this.rows.deltas[row * this.names.length + column] = delta;
      return;
    }
    const buckets = (this.rows.buckets ??= { rows: [], columns: [], granularities: [], starts: [], deltas: [] });
    buckets.rows.push(row);
    buckets.columns.push(column);
    buckets.granularities.push(granularity!);
    buckets.starts.push(bucketStart);
    buckets.deltas.push(delta);
  };

  claimed(): ClaimedRows {
    return { rows: this.rows, unknown: this.unknown };
  }

  /** Which counter bytes `start` to `end` name; -1 for none. */
  private columnOf(bytes: Buffer, start: number, end: number): number {
    for (let c = 0; c < this.names.length; c++) if (holds(bytes, start, end, this.names[c])) return c;
    return -1;
  }

  private rowOfId(id: number): number {
    let row = this.rowOfNumber.get(id);
    if (row === undefined) this.rowOfNumber.set(id, (row = this.newRow(id)));
    return row;
  }

  private rowOfEncodedId(encodedId: string): number {
    let row = this.rowOfText.get(encodedId);
    if (row === undefined) this.rowOfText.set(encodedId, (row = this.newRow(encodedId)));
    return row;
  }

  private newRow(encodedId: string | number): number {
    for (let c = 0; c < this.names.length; c++) this.rows.deltas.push(0);
    return this.rows.encodedIds.push(encodedId) - 1;
  }
}

/** The safe integer whose own text (`String(n)`) bytes `start` to `end` hold; undefined for anything else. */
function safeIntegerText(bytes: Buffer, start: number, end: number): number | undefined {
  const negative = bytes[start] === MINUS;
  const first = negative ? start + 1 : start;
  const digits = end - first;
  if (digits === 0 || digits > SAFE_DIGITS || (bytes[first] === ZERO && (digits > 1 || negative))) return undefined;
  let value = 0;
  for (let at = first; at < end; at++) {
    const code = bytes[at];
    if (code < ZERO || code > NINE) return undefined;
    value = value * 10 + (code - ZERO);
  }
  return negative ? -value : value;
}

/** The first space from `start` to `end` (exclusive); -1 if none. Compared in JS: a call into C++ costs more. */
function spaceIn(bytes: Buffer, start: number, end: number): number {
  return byteIn(bytes, SPACE, start, end);
}

/** The first `byte` from `start` to `end` (exclusive); -1 if none. */
function byteIn(bytes: Buffer, byte: number, start: number, end: number): number {
  for (let at = start; at < end; at++) if (bytes[at] === byte) return at;
  return -1;
}

/** The granularities a counter as the claim script takes it keeps, by the code of each one's letter. */
function windowsOf(scriptName: string): Map<number, Granularity> {
  const letters = scriptName.split('@')[1] ?? '';
  const windows = new Map<number, Granularity>();
  for (const granularity of GRANULARITIES) {
    const letter = GRANULARITY_CODE[granularity];
    if (letters.includes(letter)) windows.set(letter.charCodeAt(0), granularity);
  }
  return windows;
}

/** Whether bytes `start` to `end` are `name`'s. */
function holds(bytes: Buffer, start: number, end: number, name: Buffer): boolean {
  if (name.length !== end - start) return false;
  for (let i = 0; i < name.length; i++) if (name[i] !== bytes[start + i]) return false;
  return true;
}

/** `HGETALL`'s entries, handed over as a dump's strings are: their UTF-8 bytes. */
function readEntries(entries: Record<string, string>, visit: (field: DumpString, value: DumpString) => void) {
  const field = emptyString(Buffer.alloc(0));
  const value = emptyString(Buffer.alloc(0));
  for (const [name, delta] of Object.entries(entries)) {
    field.bytes = Buffer.from(name);
    field.end = field.bytes.length;
    value.bytes = Buffer.from(delta);
    value.end = value.bytes.length;
    visit(field, value);
  }
}
