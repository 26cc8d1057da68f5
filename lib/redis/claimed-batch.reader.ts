/**
 * Reads the batch a claim took (claim.lua.ts) into rows: from the `DUMP` of its hash, which Redis makes
 * in C as one string (see docs/PERFORMANCE.md, "Claims read from DUMP"), or from `HGETALL` where that
 * payload cannot be read here.
 *
 * A `DUMP` payload is one value in Redis's RDB format (`rdb.c`): its type, the value, then a footer of
 * the RDB version (2 bytes) and a CRC64 (8 bytes). Only the two forms Redis 7 and 8 dump a hash in are
 * read: a hash table (`RDB_TYPE_HASH`) and a listpack (`RDB_TYPE_HASH_LISTPACK`, `listpack.c`). Any other
 * type, RDB version, length, string encoding or listpack entry throws `UnreadableDumpError`, and the
 * caller reads the hash with `HGETALL` instead. The CRC is not checked: the payload comes straight from
 * the server, over the connection that asked for it.
 */

/** A claimed batch's rows: row r's encoded id is `encodedIds[r]`, its delta of counter c `deltas[r * counters + c]`. */
export interface BatchRows {
  encodedIds: string[];
  deltas: number[];
}

export interface ClaimedRows {
  rows: BatchRows;
  /** Field name and delta, over and over, of the batch's changes of counters not claimed for. */
  unknown: string[];
}

/** A batch hash as the claim gives it (its `DUMP` payload), or as `HGETALL` gives it. */
export type BatchHash = { payload: Buffer } | { entries: Record<string, string> };

export class UnreadableDumpError extends Error {}

/**
 * A claimed batch's rows. A change's field is "<encoded id> <counter>" (neither holds a space) and its
 * value the delta; the batch's own fields ('#…') and changes that netted to zero are skipped. Changes of
 * counters other than `counters` come back as they came, for the flusher to give back (give-back.lua.ts).
 * Throws `UnreadableDumpError` for a payload this reader does not read.
 */
export function readClaimedBatch(hash: BatchHash, counters: string[]): ClaimedRows {
  const columnOf = new Map(counters.map((counter, column) => [counter, column]));
  const rowOf = new Map<string, number>();
  const rows: BatchRows = { encodedIds: [], deltas: [] };
  const unknown: string[] = [];
  const entry = (field: string, value: string | number) => {
    if (field.startsWith('#')) return;
    const delta = Number(value);
    if (delta === 0) return;
    const space = field.indexOf(' ');
    const column = space < 0 ? undefined : columnOf.get(field.slice(space + 1));
    if (column === undefined) {
      unknown.push(field, String(value));
      return;
    }
    const encodedId = field.slice(0, space);
    let row = rowOf.get(encodedId);
    if (row === undefined) {
      row = rows.encodedIds.push(encodedId) - 1;
      rowOf.set(encodedId, row);
      for (let c = 0; c < counters.length; c++) rows.deltas.push(0);
    }
    rows.deltas[row * counters.length + column] = delta;
  };
  if ('payload' in hash) readDumpedHash(hash.payload, entry);
  else for (const [field, value] of Object.entries(hash.entries)) entry(field, value);
  return { rows, unknown };
}

const RDB_TYPE_HASH = 4;
const RDB_TYPE_HASH_LISTPACK = 16;
/** Redis 7.0 (10), 7.2 (11), 7.4 and 8.x (12): versions whose hashes dump in the two forms read here. */
const KNOWN_RDB_VERSIONS = new Set([10, 11, 12]);
/** The RDB version (2 bytes) and a CRC64 (8 bytes). */
const FOOTER_BYTES = 10;

/** Calls `entry` with each field and value of the hash dumped in `payload` (integers as numbers). */
export function readDumpedHash(payload: Buffer, entry: (field: string, value: string | number) => void): void {
  if (payload.length <= FOOTER_BYTES) throw new UnreadableDumpError('a DUMP payload shorter than its footer');
  const version = payload.readUInt16LE(payload.length - FOOTER_BYTES);
  if (!KNOWN_RDB_VERSIONS.has(version)) throw new UnreadableDumpError(`a DUMP payload of RDB version ${version}`);
  const reader = new RdbReader(payload, payload.length - FOOTER_BYTES);
  const type = reader.byte();
  if (type === RDB_TYPE_HASH) {
    for (let entries = reader.length(); entries > 0; entries--) entry(String(reader.value()), reader.value());
  } else if (type === RDB_TYPE_HASH_LISTPACK) {
    const listpack = new ListpackReader(reader.bytes());
    for (let field = listpack.next(); field !== undefined; field = listpack.next()) {
      const value = listpack.next();
      if (value === undefined) throw new UnreadableDumpError('a listpack with a field but no value');
      entry(String(field), value);
    }
  } else {
    throw new UnreadableDumpError(`a DUMP payload of type ${type}, not a hash this library reads`);
  }
  if (reader.at !== reader.end) throw new UnreadableDumpError('a DUMP payload longer than its hash');
}

/** Reads an RDB value from `start` up to `end` (the footer). */
class RdbReader {
  at = 0;

  constructor(
    private readonly data: Buffer,
    readonly end: number,
  ) {}

  byte(): number {
    if (this.at >= this.end) throw cutShort();
    return this.data[this.at++];
  }

  /** A length (`rdbLoadLen`): 6 or 14 bits, or 32 or 64 bits big-endian after a byte of its own. */
  length(): number {
    const first = this.byte();
    if (first >> 6 === 0) return first & 0x3f;
    if (first >> 6 === 1) return ((first & 0x3f) << 8) | this.byte();
    const bytes = first === 0x80 ? 4 : first === 0x81 ? 8 : 0;
    if (bytes === 0) throw new UnreadableDumpError(`a DUMP payload with length byte ${first}`);
    let length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + this.byte();
    return length;
  }

  /** A string (`rdbGenericLoadStringObject`): text, or a number where Redis saved it as an integer. */
  value(): string | number {
    if (this.at >= this.end) throw cutShort();
    const first = this.data[this.at];
    if (first >> 6 === 3 && (first & 0x3f) <= 2) {
      this.at++;
      const width = 1 << (first & 0x3f);
      return this.data.readIntLE(this.skip(width), width);
    }
    return this.bytes().toString('utf8');
  }

  /** A string's bytes: raw, or LZF-compressed (strings over 20 bytes when `rdbcompression` is on). */
  bytes(): Buffer {
    const first = this.byte();
    if (first >> 6 !== 3) {
      this.at--;
      const length = this.length();
      return this.data.subarray(this.skip(length), this.at);
    }
    if ((first & 0x3f) !== 3) throw new UnreadableDumpError(`a DUMP payload with string encoding ${first & 0x3f}`);
    const compressed = this.length();
    const length = this.length();
    const from = this.skip(compressed);
    return lzfDecompress(this.data, from, this.at, length);
  }

  /** Moves past `count` bytes; returns where they start. */
  private skip(count: number): number {
    const start = this.at;
    if (start + count > this.end) throw cutShort();
    this.at += count;
    return start;
  }
}

/** LZF decompression (liblzf's `lzf_decompress`), as Redis compresses strings in RDB payloads. */
function lzfDecompress(data: Buffer, from: number, to: number, length: number): Buffer {
  const output = Buffer.allocUnsafe(length);
  let out = 0;
  for (let at = from; at < to;) {
    const control = data[at++];
    if (control < 32) {
      // A literal run of control + 1 bytes.
      if (at + control + 1 > to || out + control + 1 > length) throw corruptLzf();
      for (let i = 0; i <= control; i++) output[out++] = data[at++];
    } else {
      // A back reference into what is written already; the two ranges may overlap, so byte by byte.
      let count = control >> 5;
      if (count === 7) count += data[at++];
      let source = out - ((control & 0x1f) << 8) - 1 - data[at++];
      count += 2;
      if (source < 0 || out + count > length || at > to) throw corruptLzf();
      while (count-- > 0) output[out++] = output[source++];
    }
  }
  if (out !== length) throw corruptLzf();
  return output;
}

/** Size in bytes (4) and number of entries (2). */
const LISTPACK_HEADER_BYTES = 6;
const LISTPACK_END = 0xff;

/** A listpack (`listpack.c`): a header, entries each followed by its size written backwards, then 0xFF. */
class ListpackReader {
  private at = LISTPACK_HEADER_BYTES;

  constructor(private readonly data: Buffer) {
    if (data.length <= LISTPACK_HEADER_BYTES || data.readUInt32LE(0) !== data.length) {
      throw new UnreadableDumpError('a listpack whose header does not give its size');
    }
  }

  /** The next entry, as text or as a number where it is an integer; undefined at the end. */
  next(): string | number | undefined {
    const { data, at } = this;
    if (at >= data.length) throw cutShort();
    const first = data[at];
    if (first === LISTPACK_END) {
      if (at !== data.length - 1) throw new UnreadableDumpError('a listpack longer than its entries');
      return undefined;
    }
    let size: number;
    let entry: string | number;
    if ((first & 0x80) === 0) {
      // A 7-bit unsigned integer.
      [entry, size] = [first, 1];
    } else if ((first & 0xc0) === 0x80) {
      // A string of up to 63 bytes.
      size = 1 + (first & 0x3f);
      entry = this.text(at + 1, at + size);
    } else if ((first & 0xe0) === 0xc0) {
      // A 13-bit signed integer.
      const unsigned = ((first & 0x1f) << 8) | this.byteAt(at + 1);
      [entry, size] = [unsigned >= 1 << 12 ? unsigned - (1 << 13) : unsigned, 2];
    } else if ((first & 0xf0) === 0xe0) {
      // A string of up to 4,095 bytes.
      size = 2 + (((first & 0x0f) << 8) | this.byteAt(at + 1));
      entry = this.text(at + 2, at + size);
    } else if (first === 0xf0) {
      // A string of up to 2^32 - 1 bytes.
      size = 5 + this.ensure(at + 5).readUInt32LE(at + 1);
      entry = this.text(at + 5, at + size);
    } else if (first >= 0xf1 && first <= 0xf3) {
      // A signed integer of 16, 24 or 32 bits.
      const width = first - 0xef;
      [entry, size] = [this.ensure(at + 1 + width).readIntLE(at + 1, width), 1 + width];
    } else if (first === 0xf4) {
      // A signed integer of 64 bits: its digits where a number would round it.
      const value = this.ensure(at + 9).readBigInt64LE(at + 1);
      [entry, size] = [Number.isSafeInteger(Number(value)) ? Number(value) : value.toString(), 9];
    } else {
      throw new UnreadableDumpError(`a listpack entry of encoding ${first}`);
    }
    this.at = at + size + backlengthBytes(size);
    if (this.at > data.length) throw cutShort();
    return entry;
  }

  private text(start: number, end: number): string {
    return this.ensure(end).toString('utf8', start, end);
  }

  private byteAt(at: number): number {
    return this.ensure(at + 1)[at];
  }

  /** The data, once it is known to hold `end` bytes. */
  private ensure(end: number): Buffer {
    if (end > this.data.length) throw cutShort();
    return this.data;
  }
}

/** How many bytes the size of an entry of `size` bytes takes after it (`lpEncodeBacklen`). */
function backlengthBytes(size: number): number {
  if (size <= 127) return 1;
  if (size < 16383) return 2;
  if (size < 2097151) return 3;
  if (size < 268435455) return 4;
  return 5;
}

const cutShort = () => new UnreadableDumpError('a DUMP payload cut short');
const corruptLzf = () => new UnreadableDumpError('a corrupt LZF string in a DUMP payload');
