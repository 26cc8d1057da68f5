/**
 * Reads the entries of a Redis hash from its `DUMP` payload (the RDB serialization of one value).
 *
 * Why: a claimed batch of 1,000 rows is some 3,000 fields. Read with `HGETALL`, ioredis decodes each
 * element of the reply on its own (about 1 µs per element); joined into one string by the claim script,
 * Redis spends most of the claim making a Lua string of every field (540 against 144 µs for the `DUMP` of
 * a 520-row batch, measured alone). A `DUMP` leaves Redis as one string, built in C.
 *
 * Only the two encodings Redis 7 dumps a hash in are read (tested with 7.0.15): a hash table
 * (`RDB_TYPE_HASH`) and a listpack (`RDB_TYPE_HASH_LISTPACK`). Anything else throws
 * `UnreadableDumpError`, for the caller to read the hash another way. The layout is that of Redis's
 * `rdb.c` (lengths, strings, LZF) and `listpack.c`.
 *
 * The payload is read where it is, byte by byte: no string is made of it or of its fields. Read as a
 * Latin-1 string of each payload (`charCodeAt`), the claims of a 100,000-row flush also made 5.9 MB
 * of strings, and reading them (`batchRowsOf`) took 0.32 against 0.22 µs per row of three counters
 * (real claim payloads, measured alone, with the changes to batch-rows.ts made along with it).
 */

/** One string of the payload: an integer, or bytes `start` to `end` (exclusive) of `bytes`. */
export interface DumpString {
  /** The payload itself, or a string decompressed from it. */
  bytes: Buffer;
  start: number;
  end: number;
  /** The value when the string was saved as an integer (its text is then the integer's decimal form). */
  integer: number | undefined;
}

export class UnreadableDumpError extends Error {}

const RDB_TYPE_HASH = 4;
const RDB_TYPE_HASH_LISTPACK = 16;
/** A payload ends with the RDB version (2 bytes) and a CRC64 (8 bytes). */
const FOOTER_BYTES = 10;
/** A listpack starts with its size in bytes (4) and its number of entries (2). */
const LISTPACK_HEADER_BYTES = 6;
const LISTPACK_END = 0xff;

/** What `forEachDumpedHashEntry` calls per entry. */
export interface HashEntryVisitor {
  /** Both objects are reused from one call to the next: copy what you keep. */
  entry(field: DumpString, value: DumpString): void;
}

/** Calls `visitor.entry` with each field and value of the hash dumped in `payload`. */
export function forEachDumpedHashEntry(payload: Buffer, visitor: HashEntryVisitor): void {
  const reader = new RdbReader(payload, payload.length - FOOTER_BYTES);
  const field = emptyDumpString(payload);
  const value = emptyDumpString(payload);
  const type = reader.byte();
  if (type === RDB_TYPE_HASH) {
    for (let entries = reader.length(); entries > 0; entries--) {
      reader.string(field);
      reader.string(value);
      visitor.entry(field, value);
    }
  } else if (type === RDB_TYPE_HASH_LISTPACK) {
    const listpack = emptyDumpString(payload);
    reader.string(listpack);
    const entries = new ListpackReader(listpack);
    while (entries.next(field)) {
      if (!entries.next(value)) throw new UnreadableDumpError('a listpack with a field but no value');
      visitor.entry(field, value);
    }
  } else {
    throw new UnreadableDumpError(`a DUMP payload of type ${type}, not a hash this library reads`);
  }
  if (reader.at !== reader.end) throw new UnreadableDumpError('a DUMP payload longer than its hash');
}

/**
 * How many fields the hash table dumped in `payload` has, from the payload's first bytes alone (a claimed
 * batch is always a hash table: see wide-pending.lua.ts); undefined for anything else, a listpack too,
 * whose header Redis usually compresses along with its entries.
 */
export function dumpedHashFields(payload: Buffer): number | undefined {
  const reader = new RdbReader(payload, Math.min(payload.length, 10));
  try {
    return reader.byte() === RDB_TYPE_HASH ? reader.length() : undefined;
  } catch {
    return undefined;
  }
}

/** The text of a dumped string (Redis strings here are ASCII or UTF-8). */
export function textOf(string: DumpString): string {
  if (string.integer !== undefined) return String(string.integer);
  return string.bytes.toString('utf8', string.start, string.end);
}

/** A string of `bytes` with nothing in it yet, for a reader to fill. */
export function emptyDumpString(bytes: Buffer): DumpString {
  return { bytes, start: 0, end: 0, integer: undefined };
}

/** Little-endian unsigned integer of up to 4 bytes at `at`. */
function uintLE(data: Buffer, at: number, bytes: number): number {
  let unsigned = 0;
  for (let i = bytes - 1; i >= 0; i--) unsigned = unsigned * 256 + data[at + i];
  return unsigned;
}

/**
 * Little-endian signed integer of 1 to 4 bytes at `at`, in 32-bit arithmetic, whose shifts give the
 * sign: most deltas are a byte or two, and this runs for nearly every field.
 */
function intLE(data: Buffer, at: number, bytes: number): number {
  switch (bytes) {
    case 1:
      return (data[at] << 24) >> 24;
    case 2:
      return ((data[at] | (data[at + 1] << 8)) << 16) >> 16;
    case 3:
      return ((data[at] | (data[at + 1] << 8) | (data[at + 2] << 16)) << 8) >> 8;
    case 4:
      return data[at] | (data[at + 1] << 8) | (data[at + 2] << 16) | (data[at + 3] << 24);
    default:
      throw new RangeError(`a ${bytes}-byte integer`);
  }
}

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

  /** A length (rdbLoadLen): 6 or 14 bits, or 32 or 64 bits big-endian after a byte of its own. */
  length(): number {
    const first = this.byte();
    switch (first >> 6) {
      case 0:
        return first & 0x3f;
      case 1:
        return ((first & 0x3f) << 8) | this.byte();
      default: {
        const bytes = first === 0x80 ? 4 : first === 0x81 ? 8 : 0;
        if (bytes === 0) throw new UnreadableDumpError(`a DUMP payload with length byte ${first}`);
        let length = 0;
        for (let i = 0; i < bytes; i++) length = length * 256 + this.byte();
        return length;
      }
    }
  }

  /** A string (rdbGenericLoadStringObject): raw, an integer of 8, 16 or 32 bits, or LZF-compressed. */
  string(into: DumpString): void {
    const first = this.byte();
    if (first >> 6 !== 3) {
      // A raw string. Up to 63 bytes (nearly every field name) its length is this byte itself: read
      // inline, without going back for `length()`.
      const length = first < 0x40 ? first : (this.at--, this.length());
      into.bytes = this.data;
      into.start = this.skip(length);
      into.end = this.at;
      into.integer = undefined;
      return;
    }
    const encoding = first & 0x3f;
    if (encoding <= 2) {
      const bytes = 1 << encoding;
      into.integer = intLE(this.data, this.skip(bytes), bytes);
      return;
    }
    if (encoding !== 3) throw new UnreadableDumpError(`a DUMP payload with string encoding ${encoding}`);
    const compressed = this.length();
    const length = this.length();
    const from = this.skip(compressed);
    into.bytes = lzfDecompress(this.data, from, this.at, length);
    into.start = 0;
    into.end = length;
    into.integer = undefined;
  }

  /** Moves past `count` bytes; returns where they start. */
  private skip(count: number): number {
    const start = this.at;
    if (start + count > this.end) throw cutShort();
    this.at += count;
    return start;
  }
}

/** LZF (liblzf's `lzf_decompress`): Redis's strings over 20 bytes, when `rdbcompression` is on (the default). */
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
      // A back reference: bytes already written, copied one by one (the two ranges may overlap).
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

/** A listpack (listpack.c): a header, entries each followed by its size written backwards, then 0xFF. */
class ListpackReader {
  private at: number;
  private readonly end: number;
  private readonly data: Buffer;

  constructor(listpack: DumpString) {
    this.data = listpack.bytes;
    this.at = listpack.start + LISTPACK_HEADER_BYTES;
    this.end = listpack.end;
  }

  /** Reads the next entry into `into`; false at the end of the listpack. */
  next(into: DumpString): boolean {
    const { data, at } = this;
    if (at >= this.end) throw cutShort();
    const first = data[at];
    if (first === LISTPACK_END) return false;
    into.bytes = data;
    into.integer = undefined;
    let size: number;
    // A 64-bit integer beyond 2^53, as text: a number would round it.
    let wide: Buffer | undefined;
    if ((first & 0x80) === 0) {
      // 7-bit unsigned integer.
      into.integer = first;
      size = 1;
    } else if ((first & 0xc0) === 0x80) {
      // String of up to 63 bytes.
      size = 1 + (first & 0x3f);
      into.start = at + 1;
    } else if ((first & 0xe0) === 0xc0) {
      // 13-bit signed integer.
      const unsigned = ((first & 0x1f) << 8) | data[at + 1];
      into.integer = unsigned >= 1 << 12 ? unsigned - (1 << 13) : unsigned;
      size = 2;
    } else if ((first & 0xf0) === 0xe0) {
      // String of up to 4,095 bytes.
      size = 2 + (((first & 0x0f) << 8) | data[at + 1]);
      into.start = at + 2;
    } else if (first === 0xf0) {
      // String of up to 2^32 - 1 bytes.
      size = 5 + uintLE(data, at + 1, 4);
      into.start = at + 5;
    } else if (first >= 0xf1 && first <= 0xf3) {
      // Signed integer of 16, 24 or 32 bits.
      const bytes = first - 0xef;
      into.integer = intLE(data, at + 1, bytes);
      size = 1 + bytes;
    } else if (first === 0xf4) {
      // Signed integer of 64 bits.
      const value = BigInt.asIntN(64, (BigInt(uintLE(data, at + 5, 4)) << 32n) | BigInt(uintLE(data, at + 1, 4)));
      if (Number.isSafeInteger(Number(value))) into.integer = Number(value);
      else wide = Buffer.from(value.toString(), 'latin1');
      size = 9;
    } else {
      throw new UnreadableDumpError(`a listpack entry of encoding ${first}`);
    }
    into.end = at + size;
    if (wide !== undefined) {
      into.bytes = wide;
      into.start = 0;
      into.end = wide.length;
    }
    this.at = at + size + backlengthBytes(size);
    if (this.at > this.end) throw cutShort();
    return true;
  }
}

/** How many bytes the size of an entry of `size` bytes takes after it (lpEncodeBacklen). */
function backlengthBytes(size: number): number {
  if (size <= 127) return 1;
  if (size < 16383) return 2;
  if (size < 2097151) return 3;
  if (size < 268435455) return 4;
  return 5;
}

const cutShort = () => new UnreadableDumpError('a DUMP payload cut short');
const corruptLzf = () => new UnreadableDumpError('a corrupt LZF string in a DUMP payload');
