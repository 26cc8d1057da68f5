import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readClaimedBatch } from '../../lib/redis/claim/claimed-batch.reader.js';
import { readDumpedHash, textOf, UnreadableDumpError } from '../../lib/redis/claim/dumped-hash.parser.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { ScriptRunner } from '../../lib/redis/script.runner.js';
import { RedisServer } from '../../support/redis-server.js';
import { REDIS_URL, RESP2, testRedis, uniquePrefix } from '../../support/redis.js';

/** The hash as the DUMP reader gives it, field by field, in the payload's order. */
function readDump(payload: Buffer): Record<string, string> {
  const entries: Record<string, string> = {};
  readDumpedHash(payload, (field, value) => (entries[textOf(field)] = textOf(value)));
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
  let roomy: RedisServer;
  let roomyClient: Redis;
  let uncompressed: RedisServer;
  let uncompressedClient: Redis;

  beforeAll(async () => {
    // Listpacks with strings of up to 10,000 bytes (lengths of 6, 12 and 32 bits), and a server that
    // never compresses.
    roomy = await RedisServer.start({
      args: ['--hash-max-listpack-value', '10000', '--hash-max-listpack-entries', '1000'],
    });
    roomyClient = new Redis(roomy.url);
    uncompressed = await RedisServer.start({ args: ['--rdbcompression', 'no'] });
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

  /** `payload` with the byte at `at` (counted from the end where negative) set to `byte`. */
  const patched = (payload: Buffer, at: number, byte: number) => {
    const copy = Buffer.from(payload);
    copy[at < 0 ? copy.length + at : at] = byte;
    return copy;
  };

  it('refuses what is not a hash it reads, a payload cut short or too long, and an RDB version it does not know', async () => {
    await redis.set(`${prefix}:string`, 'text');
    await redis.sadd(`${prefix}:set`, 'a', 'b');
    await redis.hset(`${prefix}:cut`, hashOf(VALUES));
    const hash = await redis.dumpBuffer(`${prefix}:cut`);
    // The footer holds the server's RDB version (Redis 7.0 writes 10, Valkey 8 11), 2 bytes little-endian,
    // then the CRC: the reader knows this server's, and patching the low byte below names another one.
    expect(readDump(hash)).toEqual(hashOf(VALUES));
    expect(hash[hash.length - 9]).toBe(0);
    const refusals: Array<[Buffer, string]> = [
      [await redis.dumpBuffer(`${prefix}:string`), 'a DUMP payload of type 0'],
      [await redis.dumpBuffer(`${prefix}:set`), 'a DUMP payload of type 2'],
      [hash.subarray(0, hash.length - 20), 'RDB version'],
      [hash.subarray(0, 10), 'a DUMP payload shorter than its footer'],
      [
        Buffer.concat([hash.subarray(0, hash.length - 10), Buffer.from([0]), hash.subarray(hash.length - 10)]),
        'a DUMP payload longer than its hash',
      ],
      [patched(hash, -10, 9), 'a DUMP payload of RDB version 9'],
      [patched(hash, -10, 14), 'a DUMP payload of RDB version 14'],
      [patched(hash, 0, 21), 'a DUMP payload of type 21'],
    ];
    for (const [payload, reason] of refusals) {
      expect(() => readDump(payload)).toThrow(UnreadableDumpError);
      expect(() => readDump(payload)).toThrow(reason);
    }
  });

  it('refuses a listpack with an entry encoding, a header or an end it does not know', async () => {
    // An uncompressed listpack: its bytes stand in the payload as they are in Redis.
    await uncompressedClient.hset(`${prefix}:lp`, { a: 'b' });
    const payload = await uncompressedClient.dumpBuffer(`${prefix}:lp`);
    expect(readDump(payload)).toEqual({ a: 'b' });
    // Type (1), string length (1), listpack header (6): the first entry's encoding byte is at 8.
    const listpackAt = 2;
    expect(payload.readUInt32LE(listpackAt)).toBe(payload.length - 10 - listpackAt);
    expect(() => readDump(patched(payload, listpackAt + 6, 0xf5))).toThrow('a listpack entry of encoding 245');
    expect(() => readDump(patched(payload, listpackAt, payload[listpackAt] + 1))).toThrow('header');
    expect(() => readDump(patched(payload, -11, 0x01))).toThrow(UnreadableDumpError);
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
    '7 lime_count': '4',
  };
  const rowsById = { '7': [5, -2, 0], '%C3%A9': [9007199254740991, 0, 2147483648], '12': [-1, 0, 0] };

  afterAll(async () => {
    await redis.del(`${prefix}:batch`);
    redis.disconnect();
  });

  /** Rows by id, for comparing reads whose row order follows the hash's. */
  const byId = ({ rows }: ReturnType<typeof readClaimedBatch>) =>
    Object.fromEntries(rows.encodedIds.map((id, row) => [id, rows.deltas.slice(row * 3, row * 3 + 3)]));
  /** Field and delta pairs, in the hash's order, which is Redis's: compared as a map. */
  const unknownOf = ({ unknown }: ReturnType<typeof readClaimedBatch>) =>
    new Map(Array.from({ length: unknown.length / 2 }, (_, i) => [unknown[2 * i], unknown[2 * i + 1]]));

  it('are the changes of its dump, without its own fields, zero deltas, and changes of unknown counters apart', async () => {
    await redis.hset(`${prefix}:batch`, batch);
    const read = readClaimedBatch({ payload: await redis.dumpBuffer(`${prefix}:batch`) }, counters, false);
    expect(byId(read)).toEqual(rowsById);
    expect(unknownOf(read)).toEqual(
      new Map([
        ['7 share_count', '3'],
        ['7 lime_count', '4'],
      ]),
    );
    // HGETALL's entries give the same rows.
    const fromEntries = readClaimedBatch({ entries: await redis.hgetall(`${prefix}:batch`) }, counters, false);
    expect(byId(fromEntries)).toEqual(rowsById);
    expect(unknownOf(fromEntries)).toEqual(unknownOf(read));
  });

  it("hold an integer entity's ids as numbers where the text is a safe integer's own, as text otherwise", async () => {
    const key = `${prefix}:numeric`;
    const ids = ['0', '-0', '7', '-12', '007', '123456789012345', '1234567890123456', '-9007199254740993', '1e3', '7x'];
    const fields = Object.fromEntries(ids.map((id, i) => [`${id} like_count`, String(i + 1)]));
    await redis.hset(key, { ...fields, '#wide': '-'.repeat(65), '7 view_count': '40', '8': '9' });
    const read = (hash: Parameters<typeof readClaimedBatch>[0]) => {
      const { rows, unknown } = readClaimedBatch(hash, ['like_count', 'view_count'], true);
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

  it('hold every row of a batch whose size is not known beforehand, ids far apart', async () => {
    const key = `${prefix}:many`;
    // 100 fields of a listpack: ids of 15 digits (the most read as numbers), negative ones, and ids alike
    // in their low 32 bits.
    const ids = Array.from({ length: 100 }, (_, i) =>
      i % 3 === 0 ? -i : i % 3 === 1 ? i * 4_294_967_296 + 5 : 999_999_999_999_999 - i,
    );
    await redis.hset(key, Object.fromEntries(ids.map((id, i) => [`${id} like_count`, String(i + 1)])));
    try {
      expect(await redis.object('ENCODING', key)).toBe('listpack');
      const expected = new Map(ids.map((id, i) => [id, i + 1]));
      for (const hash of [{ payload: await redis.dumpBuffer(key) }, { entries: await redis.hgetall(key) }]) {
        const { rows } = readClaimedBatch(hash, ['like_count'], true);
        expect(new Map(rows.encodedIds.map((id, row) => [id, rows.deltas[row]]))).toEqual(expected);
      }
    } finally {
      await redis.del(key);
    }
  });

  it('are read with HGETALL, with one warning, when the ACL of the Redis user refuses DUMP', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const user = `${prefix}-user`;
    await redis.acl('SETUSER', user, 'on', 'nopass', '+@all', '-dump', `~${prefix}*`);
    const client = new Redis(REDIS_URL, { ...RESP2, username: user, password: 'x' });
    const shard = new CounterKeys(prefix, 1).shard('t', 0);
    try {
      await client.ping();
      await expect(client.dump(`${prefix}:x`)).rejects.toThrow(/NOPERM/);
      const store = new FlushStore(new ScriptRunner(client, 1000));
      const changes = Object.fromEntries(Object.entries(batch).filter(([field]) => !field.startsWith('#')));
      for (const batchId of ['b-2', 'b-3']) {
        await redis.hset(shard.pending, changes);
        await redis.zadd(shard.dirty, 1, '7', 2, '%C3%A9', 3, '12');
        await redis.set(shard.generation, '0');
        const claim = await store.claim(shard, {
          counters,
          numericIds: false,
          token: 'token',
          leaseMs: 10_000,
          batchId,
          limit: 1000,
        });
        expect(claim).toMatchObject({ kind: 'batch', recovered: false, batchId, moreRows: 0 });
        if (claim.kind !== 'batch') throw new Error('no batch');
        expect(byId(claim)).toEqual(rowsById);
        expect(await store.ack(shard, batchId, 'token', true, counters, [])).toBe(true);
      }
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toContain('Redis refused DUMP in the claim script');
    } finally {
      warn.mockRestore();
      client.disconnect();
      await redis.del(shard.pending, shard.dirty, shard.generation, shard.batch, shard.lease);
      await redis.acl('DELUSER', user);
    }
  });
});
