/**
 * Reads the entries of a Redis hash from its `DUMP` payload: one value in Redis's RDB format (`rdb.c`),
 * its type, the value, then a footer of the RDB version (2 bytes) and a CRC64 (8 bytes).
 *
 * Only the two forms Redis 7 and 8 and Valkey 7 to 9 dump a hash in are read: a hash table (`RDB_TYPE_HASH`)
 * and a listpack (`RDB_TYPE_HASH_LISTPACK`, `listpack.c`). Any other type, RDB version, length, string encoding or
 * listpack entry throws `UnreadableDumpError`, and the caller reads the hash with `HGETALL` instead. The
 * CRC is not checked: the payload comes straight from the server, over the connection that asked for it.
 *
 * Entries are handed over as byte ranges of the payload, not as strings: making a string of every field
 * cost more than the rest of reading a claim (see docs/PERFORMANCE.md, "Claims read from DUMP").
 */

/** One string of the payload: an integer, or bytes `start` to `end` (exclusive) of `bytes`. */
export interface DumpString {
  /** The payload itself, or a string decompressed from it. */
  bytes: Buffer;
  start: number;
  end: number;
  /** The value when Redis stored the string as an integer (its text is the integer's decimal form). */
  integer: number | undefined;
}

export class UnreadableDumpError extends Error {}

/** Called with each entry; both objects are reused from one call to the next: copy what you keep. */
export type HashEntryVisitor = (field: DumpString, value: DumpString) => void;

const RDB_TYPE_HASH = 4;
const RDB_TYPE_HASH_LISTPACK = 16;
/**
 * Versions whose hashes dump in the two forms read here, each shown by payloads of test/fixtures/dumps/:
 * Redis 7.0 (10), Redis 7.2 and Valkey 7.2-8.x (11), Redis 7.4-8.4 (12), Redis 8.6 (13), Valkey 9 (80).
 * A hash with field expirations or module metadata dumps in another form, refused by its type.
 */
const KNOWN_RDB_VERSIONS = new Set([10, 11, 12, 13, 80]);
/** The RDB version (2 bytes) and a CRC64 (8 bytes). */
const FOOTER_BYTES = 10;
/** A listpack's size in bytes (4) and number of entries (2). */
const LISTPACK_HEADER_BYTES = 6;
const LISTPACK_END = 0xff;

/** Calls `visit` with each field and value of the hash dumped in `payload`. */
export function readDumpedHash(payload: Buffer, visit: HashEntryVisitor): void {
  try {
    readHash(payload, visit);
  } catch (error) {
    // A length that points past the payload's end.
    if (error instanceof RangeError) throw cutShort();
    throw error;
  }
}

function readHash(payload: Buffer, visit: HashEntryVisitor): void {
  if (payload.length <= FOOTER_BYTES) throw new UnreadableDumpError('a DUMP payload shorter than its footer');
  const version = payload.readUInt16LE(payload.length - FOOTER_BYTES);
  if (!KNOWN_RDB_VERSIONS.has(version)) throw new UnreadableDumpError(`a DUMP payload of RDB version ${version}`);
  const reader = new RdbReader(payload, payload.length - FOOTER_BYTES);
  const field = emptyString(payload);
  const value = emptyString(payload);
  const type = reader.byte();
  if (type === RDB_TYPE_HASH) {
    for (let entries = reader.length(); entries > 0; entries--) {
      reader.string(field);
      reader.string(value);
      visit(field, value);
    }
  } else if (type === RDB_TYPE_HASH_LISTPACK) {
    const listpack = emptyString(payload);
    reader.string(listpack);
    const entries = new ListpackReader(listpack);
    while (entries.next(field)) {
      if (!entries.next(value)) throw new UnreadableDumpError('a listpack with a field but no value');
      visit(field, value);
    }
  } else {
    throw new UnreadableDumpError(`a DUMP payload of type ${type}, not a hash this library reads`);
  }
  if (reader.at !== reader.end) throw new UnreadableDumpError('a DUMP payload longer than its hash');
}

/** The text of a dumped string (Redis strings here are ASCII or UTF-8). */
export function textOf(string: DumpString): string {
  if (string.integer !== undefined) return String(string.integer);
  return string.bytes.toString('utf8', string.start, string.end);
}

/** A string of `bytes` with nothing in it yet, for a reader to fill. */
export function emptyString(bytes: Buffer): DumpString {
  return { bytes, start: 0, end: 0, integer: undefined };
}

/** Reads an RDB value, up to `end` (the footer). */
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

  /** A string (`rdbGenericLoadStringObject`): raw, an integer of 8, 16 or 32 bits, or LZF-compressed. */
  string(into: DumpString): void {
    const first = this.byte();
    if (first >> 6 !== 3) {
      // Raw: its length is this byte where it is under 64 (nearly every field name).
      const length = first < 0x40 ? first : (this.at--, this.length());
      into.bytes = this.data;
      into.start = this.skip(length);
      into.end = this.at;
      into.integer = undefined;
      return;
    }
    const encoding = first & 0x3f;
    if (encoding <= 2) {
      const width = 1 << encoding;
      into.integer = this.data.readIntLE(this.skip(width), width);
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

/** LZF decompression (liblzf's `lzf_decompress`), as Redis compresses strings over 20 bytes. */
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

/** A listpack: a header, entries each followed by its size written backwards, then 0xFF. */
class ListpackReader {
  private at: number;
  private readonly end: number;
  private readonly data: Buffer;

  constructor(listpack: DumpString) {
    this.data = listpack.bytes;
    this.at = listpack.start + LISTPACK_HEADER_BYTES;
    this.end = listpack.end;
    const size = listpack.end - listpack.start;
    if (size <= LISTPACK_HEADER_BYTES || this.data.readUInt32LE(listpack.start) !== size) {
      throw new UnreadableDumpError('a listpack whose header does not give its size');
    }
  }

  /** Reads the next entry into `into`; false at the end of the listpack. */
  next(into: DumpString): boolean {
    const { data, at } = this;
    if (at >= this.end) throw cutShort();
    const first = data[at];
    if (first === LISTPACK_END) {
      if (at !== this.end - 1) throw new UnreadableDumpError('a listpack longer than its entries');
      return false;
    }
    into.bytes = data;
    into.integer = undefined;
    let size: number;
    // A 64-bit integer beyond the safe integers, as its digits: a number would round it.
    let digits: Buffer | undefined;
    if ((first & 0x80) === 0) {
      // A 7-bit unsigned integer.
      into.integer = first;
      size = 1;
    } else if ((first & 0xc0) === 0x80) {
      // A string of up to 63 bytes.
      size = 1 + (first & 0x3f);
      into.start = at + 1;
    } else if ((first & 0xe0) === 0xc0) {
      // A 13-bit signed integer.
      const unsigned = ((first & 0x1f) << 8) | data[at + 1];
      into.integer = unsigned >= 1 << 12 ? unsigned - (1 << 13) : unsigned;
      size = 2;
    } else if ((first & 0xf0) === 0xe0) {
      // A string of up to 4,095 bytes.
      size = 2 + (((first & 0x0f) << 8) | data[at + 1]);
      into.start = at + 2;
    } else if (first === 0xf0) {
      // A string of up to 2^32 - 1 bytes.
      size = 5 + data.readUInt32LE(at + 1);
      into.start = at + 5;
    } else if (first >= 0xf1 && first <= 0xf3) {
      // A signed integer of 16, 24 or 32 bits.
      const width = first - 0xef;
      into.integer = data.readIntLE(at + 1, width);
      size = 1 + width;
    } else if (first === 0xf4) {
      // A signed integer of 64 bits.
      const value = data.readBigInt64LE(at + 1);
      if (Number.isSafeInteger(Number(value))) into.integer = Number(value);
      else digits = Buffer.from(value.toString(), 'latin1');
      size = 9;
    } else {
      throw new UnreadableDumpError(`a listpack entry of encoding ${first}`);
    }
    into.end = at + size;
    if (digits !== undefined) [into.bytes, into.start, into.end] = [digits, 0, digits.length];
    this.at = at + size + backlengthBytes(size);
    if (this.at > this.end) throw cutShort();
    return true;
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
