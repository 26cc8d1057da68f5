import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Logger } from '@nestjs/common';
import { batchRowsOf } from '../lib/redis/batch-rows.js';
import { CounterStore } from '../lib/redis/counter.store.js';
import { dumpedHashFields, forEachDumpedHashEntry, textOf, UnreadableDumpError } from '../lib/redis/hash-dump.js';
import { CounterKeys } from '../lib/redis/keys.js';
import { PrivateRedis } from './support/private-redis.js';
import { REDIS_URL, testRedis, uniquePrefix } from './support/redis.js';

/** The hash as the DUMP reader gives it, field by field, in the payload's order. */
function readDump(payload: Buffer): Record<string, string> {
  const entries: Record<string, string> = {};
  forEachDumpedHashEntry(payload, { entry: (field, value) => (entries[textOf(field)] = textOf(value)) });
  return entries;
}

/**
 * Values of every width Redis stores an integer in (an RDB string of 8, 16 or 32 bits, a listpack entry
 * of 7, 13, 16, 24, 32 or 64 bits) and some it keeps as text (beyond 32 bits in a hash table, beyond 64
 * bits anywhere, not canonical).
 */
const VALUES = [
  '0',
  '1',
  '-1',
  '63',
  '64',
  '127',
  '128',
  '-128',
  '-129',
  '4095',
  '-4096',
  '4096',
  '32767',
  '-32768',
  '32768',
  '8388607',
  '-8388608',
  '8388608',
  '2147483647',
  '-2147483648',
  '2147483648',
  '-2147483649',
  '9007199254740991',
  '-9007199254740991',
  '100000000000000',
  '9223372036854775807',
  '-9223372036854775808',
  '18446744073709551616',
  '007',
  '+5',
  '1.5',
  ' 3',
];

/** Field names: short, exactly 20 and 21 bytes (LZF starts above 20), long and repetitive, not ASCII. */
const FIELDS = [
  '1 like_count',
  `${'9'.repeat(8)} view_count`,
  `${'4'.repeat(9)} view_count`,
  `${'ab'.repeat(25)} c`,
  'é%20x ünïcode_count',
  '#id',
];

function hashOf(values: string[]): Record<string, string> {
  const hash: Record<string, string> = {};
  values.forEach((value, index) => (hash[`${FIELDS[index % FIELDS.length]}${index}`] = value));
  return hash;
}

describe('reading a hash from its DUMP payload', () => {
  const redis = testRedis();
  const prefix = uniquePrefix('dump');
  let roomy: PrivateRedis;
  let roomyClient: Redis;
  let uncompressed: PrivateRedis;
  let uncompressedClient: Redis;

  beforeAll(async () => {
    // Listpacks with strings of up to 10,000 bytes (lengths of 6, 12 and 32 bits), and a server that
    // never compresses.
    roomy = await PrivateRedis.start(['--hash-max-listpack-value', '10000', '--hash-max-listpack-entries', '1000']);
    roomyClient = new Redis(roomy.url);
    uncompressed = await PrivateRedis.start(['--rdbcompression', 'no']);
    uncompressedClient = new Redis(uncompressed.url);
  });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    roomyClient.disconnect();
    uncompressedClient.disconnect();
    await roomy.stop();
    await uncompressed.stop();
  });

  async function roundTrip(client: Redis, key: string, hash: Record<string, string>, encoding: string) {
    await client.del(key);
    await client.hset(key, hash);
    expect(await client.object('ENCODING', key)).toBe(encoding);
    const payload = await client.dumpBuffer(key);
    expect(readDump(payload)).toEqual(await client.hgetall(key));
    expect(readDump(payload)).toEqual(hash);
    // A hash table's number of fields, from the payload's first bytes alone.
    expect(dumpedHashFields(payload)).toBe(encoding === 'hashtable' ? Object.keys(hash).length : undefined);
  }

  it('reads a hash table: integers of 8, 16 and 32 bits, text, LZF-compressed and non-ASCII names', async () => {
    // A 65-byte value makes Redis keep the hash as a hash table, as every pending hash is kept.
    const hash = { ...hashOf([...VALUES, ...VALUES]), '#wide': '-'.repeat(65) };
    await roundTrip(redis, `${prefix}:table`, hash, 'hashtable');
    await roundTrip(uncompressedClient, `${prefix}:table`, hash, 'hashtable');
  });

  it('reads a large hash table (lengths of 14 and 32 bits)', async () => {
    const hash: Record<string, string> = {};
    for (let i = 0; i < 20_000; i++) hash[`${i * 7919} like_count`] = String((i % 3 === 0 ? -1 : 1) * i * 104_729);
    await roundTrip(redis, `${prefix}:large`, hash, 'hashtable');
  });

  it('reads a listpack: integers of 7, 13, 16, 24, 32 and 64 bits, text, strings of 6, 12 and 32-bit lengths', async () => {
    await roundTrip(redis, `${prefix}:small`, hashOf(VALUES.slice(0, 20)), 'listpack');
    await roundTrip(redis, `${prefix}:small2`, hashOf(VALUES.slice(20)), 'listpack');
    await roundTrip(redis, `${prefix}:tiny`, { '1 like_count': '5' }, 'listpack');
    // A 64-bit integer beyond 2^53 (kept as text) as the hash's first value, near the listpack's start.
    await roundTrip(redis, `${prefix}:wide-first`, { a: '9223372036854775807', b: '-9007199254740993' }, 'listpack');
    const long = {
      ...hashOf(VALUES),
      ['x'.repeat(100)]: 'y'.repeat(200),
      [`z${'0123456789'.repeat(500)}`]: 'q'.repeat(5_000),
    };
    await roundTrip(roomyClient, `${prefix}:roomy`, long, 'listpack');
    await roundTrip(uncompressedClient, `${prefix}:small`, hashOf(VALUES), 'listpack');
  });

  it('refuses what is not a hash it reads, or is cut short', async () => {
    await redis.set(`${prefix}:string`, 'text');
    await redis.sadd(`${prefix}:set`, 'a', 'b');
    await redis.hset(`${prefix}:cut`, hashOf(VALUES));
    const cut = await redis.dumpBuffer(`${prefix}:cut`);
    for (const payload of [
      await redis.dumpBuffer(`${prefix}:string`),
      await redis.dumpBuffer(`${prefix}:set`),
      cut.subarray(0, cut.length - 20),
      Buffer.concat([cut.subarray(0, cut.length - 10), Buffer.from([0]), cut.subarray(cut.length - 10)]),
    ]) {
      expect(() => readDump(payload)).toThrow(UnreadableDumpError);
    }
    // No count for what is no hash, or too short to hold one.
    expect(dumpedHashFields(await redis.dumpBuffer(`${prefix}:string`))).toBeUndefined();
    expect(dumpedHashFields(cut.subarray(0, 1))).toBeUndefined();
  });
});

describe("a claimed batch's rows", () => {
  const redis = testRedis();
  const prefix = uniquePrefix('batchrows');
  const counters = ['like_count', 'view_count', 'ünïcode_count'];
  const batch = {
    '#id': 'b-1',
    '#rows': '3',
    '#wide': '-'.repeat(65),
    '7 like_count': '5',
    '7 view_count': '-2',
    '7 %C3%A9 ünïcode_count': '0',
    '%C3%A9 ünïcode_count': '2147483648',
    '%C3%A9 like_count': '9007199254740991',
    '12 view_count': '0',
    '12 like_count': '-1',
    '7 share_count': '3',
  };
  const expected = {
    rows: {
      encodedIds: expect.arrayContaining(['7', '%C3%A9', '12']),
      deltas: expect.any(Array),
    },
    unknown: ['7 share_count', '3'],
  };

  afterAll(async () => {
    await redis.del(`${prefix}:batch`, `${prefix}:string`);
    redis.disconnect();
  });

  /** Rows by id, for comparing reads whose row order follows the hash's. */
  const byId = ({ rows }: ReturnType<typeof batchRowsOf>) =>
    Object.fromEntries(rows.encodedIds.map((id, row) => [id, rows.deltas.slice(row * 3, row * 3 + 3)]));

  it('are the changes of its dump, without its own fields, zero deltas and unknown counters', async () => {
    await redis.hset(`${prefix}:batch`, batch);
    const read = batchRowsOf({ payload: await redis.dumpBuffer(`${prefix}:batch`) }, counters);
    expect(read).toEqual(expected);
    expect(byId(read)).toEqual({ '7': [5, -2, 0], '%C3%A9': [9007199254740991, 0, 2147483648], '12': [-1, 0, 0] });
    // HGETALL's entries give the same rows.
    expect(byId(batchRowsOf({ entries: await redis.hgetall(`${prefix}:batch`) }, counters))).toEqual(byId(read));
  });

  it("hold an integer entity's ids as numbers where the text is a safe integer's own, as text otherwise", async () => {
    const key = `${prefix}:numeric`;
    const ids = ['0', '-0', '7', '-12', '007', '123456789012345', '1234567890123456', '-9007199254740993', '1e3', '7x'];
    const fields = Object.fromEntries(ids.map((id, i) => [`${id} like_count`, String(i + 1)]));
    await redis.hset(key, { ...fields, '#wide': '-'.repeat(65), '7 view_count': '40', '8': '9' });
    const read = (hash: Parameters<typeof batchRowsOf>[0]) => {
      const { rows, unknown } = batchRowsOf(hash, ['like_count', 'view_count'], true);
      const byKey = new Map(rows.encodedIds.map((id, row) => [id, rows.deltas.slice(row * 2, row * 2 + 2)]));
      return { byKey, unknown };
    };
    try {
      const fromDump = read({ payload: await redis.dumpBuffer(key) });
      // Compared as maps: the order of a hash's fields is Redis's.
      expect(fromDump.byKey).toEqual(
        new Map<string | number, number[]>([
          [0, [1, 0]],
          ['-0', [2, 0]],
          [7, [3, 40]],
          [-12, [4, 0]],
          ['007', [5, 0]],
          [123456789012345, [6, 0]],
          ['1234567890123456', [7, 0]],
          ['-9007199254740993', [8, 0]],
          ['1e3', [9, 0]],
          ['7x', [10, 0]],
        ]),
      );
      expect(fromDump.unknown).toEqual(['8', '9']);
      // HGETALL's entries give the same rows.
      const fromEntries = read({ entries: await redis.hgetall(key) });
      expect(fromEntries.byKey).toEqual(fromDump.byKey);
      expect(fromEntries.unknown).toEqual(fromDump.unknown);
    } finally {
      await redis.del(key);
    }
  });

  it('tell apart counters whose names share length, first and last bytes, and names that differ inside', async () => {
    const key = `${prefix}:names`;
    // 'x_a' and 'y_Z' fall in one slot of the name table ((3 × 31 + 7 × byte 0 + last byte) mod 256), so
    // they are compared one by one; 'lime_count' is not 'like_count', though both begin and end alike.
    const names = ['x_a', 'y_Z', 'like_count', 'é_count'];
    await redis.hset(key, {
      '1 x_a': '1',
      '1 y_Z': '2',
      '2 like_count': '3',
      '2 lime_count': '4',
      '3 é_count': '5',
      '3 y_a': '6',
    });
    try {
      for (const numericIds of [true, false]) {
        const { rows, unknown } = batchRowsOf({ payload: await redis.dumpBuffer(key) }, names, numericIds);
        const id = (n: number) => (numericIds ? n : String(n));
        const byKey = new Map(
          rows.encodedIds.map((encodedId, row) => [encodedId, rows.deltas.slice(row * 4, row * 4 + 4)]),
        );
        expect(byKey).toEqual(
          new Map<string | number, number[]>([
            [id(1), [1, 2, 0, 0]],
            [id(2), [0, 0, 3, 0]],
            [id(3), [0, 0, 0, 5]],
          ]),
        );
        // Pairs in the hash's order, which is Redis's: compared as a map.
        expect(
          new Map([
            [unknown[0], unknown[1]],
            [unknown[2], unknown[3]],
          ]),
        ).toEqual(
          new Map([
            ['2 lime_count', '4'],
            ['3 y_a', '6'],
          ]),
        );
      }
    } finally {
      await redis.del(key);
    }
  });

  it('hold every row of a batch whose size is not known beforehand, ids far apart', async () => {
    const key = `${prefix}:many`;
    // 100 fields: a listpack, whose field count the reader does not know (nor HGETALL's), so the index of
    // rows by id starts small and grows several times. Ids of 15 digits (the most read as numbers),
    // negative ones, and ids alike in their low 32 bits.
    const ids = Array.from({ length: 100 }, (_, i) =>
      i % 3 === 0 ? -i : i % 3 === 1 ? i * 4_294_967_296 + 5 : 999_999_999_999_999 - i,
    );
    await redis.hset(key, Object.fromEntries(ids.map((id, i) => [`${id} like_count`, String(i + 1)])));
    try {
      expect(await redis.object('ENCODING', key)).toBe('listpack');
      const expected = new Map(ids.map((id, i) => [id, i + 1]));
      for (const hash of [{ payload: await redis.dumpBuffer(key) }, { entries: await redis.hgetall(key) }]) {
        const { rows } = batchRowsOf(hash, ['like_count'], true);
        expect(new Map(rows.encodedIds.map((id, row) => [id, rows.deltas[row]]))).toEqual(expected);
      }
    } finally {
      await redis.del(key);
    }
  });

  it('are read with HGETALL, with one warning, when the DUMP is in a form this library does not read', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const client = testRedis();
    try {
      await client.ping();
      await redis.hset(`${prefix}:batch`, batch);
      await redis.set(`${prefix}:string`, 'not a hash');
      const store = new CounterStore(client, 1000, 60);
      const shard = { ...new CounterKeys(prefix, 1).shard('t', 0), batch: `${prefix}:batch` };
      const unreadable = await redis.dumpBuffer(`${prefix}:string`);
      const claimedRows = (payload: Buffer) =>
        (
          store as unknown as {
            claimedRows(
              s: typeof shard,
              p: Buffer,
              r: { counters: string[]; numericIds: boolean },
            ): Promise<ReturnType<typeof batchRowsOf>>;
          }
        ).claimedRows(shard, payload, { counters, numericIds: false });
      const first = await claimedRows(unreadable);
      const second = await claimedRows(unreadable);
      expect(first).toEqual(expected);
      expect(byId(first)).toEqual({ '7': [5, -2, 0], '%C3%A9': [9007199254740991, 0, 2147483648], '12': [-1, 0, 0] });
      expect(second).toEqual(first);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toContain('could not be read from its DUMP (a DUMP payload of type 0');
    } finally {
      warn.mockRestore();
      client.disconnect();
    }
  });

  it('are read with HGETALL, with one warning, when the ACL of the Redis user refuses DUMP', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const user = `${prefix}-user`;
    await redis.acl('SETUSER', user, 'on', 'nopass', '+@all', '-dump', `~${prefix}*`);
    const client = new Redis(REDIS_URL, { protocol: 2, username: user, password: 'x' });
    try {
      await client.ping();
      await expect(client.dump(`${prefix}:x`)).rejects.toThrow(/NOPERM/);
      const shard = new CounterKeys(prefix, 1).shard('t', 0);
      const changes = Object.fromEntries(Object.entries(batch).filter(([field]) => !field.startsWith('#')));
      await redis.hset(shard.pending, changes);
      await redis.zadd(shard.dirty, 1, '7', 2, '%C3%A9', 3, '12');
      await redis.set(shard.generation, '0');
      const store = new CounterStore(client, 1000, 60);
      const claim = await store.claim(shard, {
        counters,
        token: 'token',
        leaseMs: 10_000,
        batchId: 'b-2',
        limit: 1000,
        numericIds: false,
      });
      expect(claim).toMatchObject({
        kind: 'batch',
        recovered: false,
        batchId: 'b-2',
        moreRows: 0,
        unknown: ['7 share_count', '3'],
      });
      if (claim.kind !== 'batch') throw new Error('no batch');
      expect(byId(claim)).toEqual({ '7': [5, -2, 0], '%C3%A9': [9007199254740991, 0, 2147483648], '12': [-1, 0, 0] });
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toContain('Redis refused DUMP in the claim script');
      await redis.del(
        ...Object.values(shard).filter((key): key is string => typeof key === 'string' && key.startsWith(prefix)),
      );
    } finally {
      warn.mockRestore();
      client.disconnect();
      await redis.acl('DELUSER', user);
    }
  });
});
