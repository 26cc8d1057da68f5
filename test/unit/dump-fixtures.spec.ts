import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readClaimedBatch } from '../../lib/redis/claim/claimed-batch.reader.js';
import { readDumpedHash, textOf, UnreadableDumpError } from '../../lib/redis/claim/dumped-hash.parser.js';
import type { DumpFixtureFile } from '../fixtures/dumps/make-dump-fixtures.js';

// The golden DUMP payloads of test/fixtures/dumps/ (scripts/make-dump-fixtures.sh): the hashes the
// library writes, as each server version dumps them. A version the parser reads gives exactly the
// entries HGETALL gave; any other is refused, and the flush reads that batch with HGETALL instead.
const DIRECTORY = new URL('../fixtures/dumps/', import.meta.url);
const FILES: DumpFixtureFile[] = readdirSync(DIRECTORY)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => JSON.parse(readFileSync(new URL(name, DIRECTORY), 'utf8')) as DumpFixtureFile);

/** RDB versions whose hashes the parser reads: Redis 7.0, 7.2, 7.4-8.4, 8.6, and Valkey 9. */
const READ_VERSIONS = [10, 11, 12, 13, 80];
const COUNTERS = ['like_count', 'view_count', 'ünïcode_count'];
const RDB_ENC_LZF = 0xc3;

/** Every field and value the parser visits, in its order. */
function visited(payload: Buffer): Array<[string, string]> {
  const entries: Array<[string, string]> = [];
  readDumpedHash(payload, (field, value) => entries.push([textOf(field), textOf(value)]));
  return entries;
}

const cases = FILES.flatMap((file) =>
  file.payloads.map((fixture) => ({ label: `${file.server} ${file.version} ${fixture.name}`, file, fixture })),
);

describe('DUMP payloads of every server version', () => {
  it('come from the servers and formats the library supports, each hash form with and without LZF', () => {
    expect([...new Set(FILES.map((file) => file.rdbVersion))].sort((a, b) => a - b)).toEqual([10, 11, 12, 13, 80]);
    for (const file of FILES) {
      const forms = file.payloads.map(({ hex, encoding, lzf, type }) => {
        const payload = Buffer.from(hex, 'hex');
        expect(payload.readUInt16LE(payload.length - 10)).toBe(file.rdbVersion);
        expect(payload[0]).toBe(type);
        // A listpack is one string: compressed whole, or not at all.
        if (encoding === 'listpack') expect(payload[1] === RDB_ENC_LZF).toBe(lzf);
        return `${encoding}${lzf ? '+lzf' : ''}`;
      });
      expect(new Set(forms)).toEqual(new Set(['listpack', 'listpack+lzf', 'hashtable', 'hashtable+lzf']));
    }
  });

  it.each(cases)('$label: exactly its entries, or refused for an RDB version not read', ({ file, fixture }) => {
    const payload = Buffer.from(fixture.hex, 'hex');
    if (!READ_VERSIONS.includes(file.rdbVersion)) {
      expect(() => visited(payload)).toThrow(UnreadableDumpError);
      expect(() => visited(payload)).toThrow(`a DUMP payload of RDB version ${file.rdbVersion}`);
      return;
    }
    const entries = visited(payload);
    // Each field once, and nothing else: a map alone would hide a field read twice.
    expect(entries).toHaveLength(Object.keys(fixture.entries).length);
    expect(Object.fromEntries(entries)).toEqual(fixture.entries);
    // The claim's reader gives the rows HGETALL's entries give.
    const fromDump = readClaimedBatch({ payload }, COUNTERS, false);
    const fromEntries = readClaimedBatch({ entries: fixture.entries }, COUNTERS, false);
    expect(
      new Map(fromDump.rows.encodedIds.map((id, row) => [id, fromDump.rows.deltas.slice(row * 3, row * 3 + 3)])),
    ).toEqual(
      new Map(fromEntries.rows.encodedIds.map((id, row) => [id, fromEntries.rows.deltas.slice(row * 3, row * 3 + 3)])),
    );
  });

  it('refuses every RDB version it was not shown, whatever the payload', () => {
    const payload = Buffer.from(FILES[0].payloads[0].hex, 'hex');
    for (const version of [0, 9, 14, 79, 81, 0xffff]) {
      const patched = Buffer.from(payload);
      patched.writeUInt16LE(version, patched.length - 10);
      expect(() => visited(patched)).toThrow(`a DUMP payload of RDB version ${version}`);
    }
  });
});
