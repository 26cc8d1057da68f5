import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { COUNTER_DEFAULTS } from '../../lib/counter.constants.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import type { BenchContext, BenchScenario } from '../harness/bench-context.js';
import { giveCountersValues, insertRows, loadIntoRedis, startBenchApp, type BenchApp } from '../harness/bench-app.js';
import { BenchPost, COUNTER_NAMES } from '../../test/fixtures/entities.js';
import type { BenchRow, TargetCheck } from '../harness/bench-results.js';
import { withDatabase } from '../harness/databases.js';
import { deleteKeys, REDIS_URL, RESP2 } from '../harness/redis-targets.js';

/** The issue's target for a row that is only cached (no change waiting). */
const CLEAN_TARGET_BYTES = 150;
/** Keys per pipeline when writing or measuring. */
const CHUNK = 1_000;
/** Increments in flight while making rows dirty. */
const IN_FLIGHT = 200;

/** What MEMORY USAGE reports for a set of keys. */
interface Usage {
  bytes: number;
  /** Keys that exist (MEMORY USAGE answers nil for the others). */
  keys: number;
}

/** The keys one measurement covers: the rows' hashes, and the keys each shard of the entity has. */
interface Layout {
  rowKeys: string[];
  shardKeys: string[];
  dirtySets: string[];
  pendingHashes: string[];
  idempotencyRecords: string[];
}

/**
 * A key prefix as long as the default (`ctr`), so that keys are exactly as long as a user's, and that
 * no key on the shared server uses yet: this run's own, as `benchPrefix` gives other scenarios theirs.
 */
async function unusedPrefixOfDefaultLength(redis: Redis): Promise<string> {
  for (let attempt = 0; attempt < 32; attempt++) {
    const prefix = `m${randomBytes(1).toString('hex')}`;
    if (prefix.length !== COUNTER_DEFAULTS.keyPrefix.length)
      throw new Error(`prefix ${prefix} is not as long as the default`);
    if (!(await hasKeysUnder(redis, prefix))) return prefix;
  }
  throw new Error('no unused three-character key prefix found');
}

async function hasKeysUnder(redis: Redis, prefix: string): Promise<boolean> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length > 0) return true;
    cursor = next;
  } while (cursor !== '0');
  return false;
}

/** `MEMORY USAGE key SAMPLES 0` (every element counted) summed over `keys`. */
async function memoryUsage(redis: Redis, keys: string[]): Promise<Usage> {
  const usage: Usage = { bytes: 0, keys: 0 };
  for (let start = 0; start < keys.length; start += CHUNK) {
    const pipeline = redis.pipeline();
    for (const key of keys.slice(start, start + CHUNK)) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    for (const [error, bytes] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      if (bytes === null) continue;
      usage.bytes += Number(bytes);
      usage.keys++;
    }
  }
  return usage;
}

/** The server's `used_memory`: everything, other users' keys included. */
async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
}

async function writeInChunks(
  redis: Redis,
  count: number,
  write: (pipeline: ReturnType<Redis['pipeline']>, index: number) => void,
) {
  for (let start = 0; start < count; start += CHUNK) {
    const pipeline = redis.pipeline();
    for (let index = start; index < Math.min(count, start + CHUNK); index++) write(pipeline, index);
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
  }
}

/**
 * Realistic counters, different per row: likes up to 5,000, views up to 5 million, comments up to 300.
 * `giveCountersValues` writes the same in SQL; every increment's result is checked against these.
 */
const databaseValues = (id: number) => [(id * 37) % 5_000, (id * 7_919) % 5_000_000, (id * 13) % 300];

/** The keys the module keeps for rows 1..rows of BenchPost, computed as the module computes them. */
function layoutOf(bench: BenchApp, rows: number): Layout {
  const keys = bench.app.get(CounterKeys, { strict: false });
  const entity = bench.app.get(CounterRegistry, { strict: false }).get(BenchPost);
  const rowKeys = Array.from({ length: rows }, (_, i) => {
    const encoded = keys.encodeId(String(i + 1));
    return keys.shard(entity.key, keys.shardOf(encoded)).row(encoded);
  });
  const shards = keys.shardsOf(entity.key);
  const shardKeys = shards.flatMap((shard) => [shard.dirty, shard.pending, shard.lease, shard.batch, shard.generation]);
  return {
    rowKeys,
    shardKeys,
    dirtySets: shards.map((shard) => shard.dirty),
    pendingHashes: shards.map((shard) => shard.pending),
    idempotencyRecords: shards.map((shard) => shard.idempotency),
  };
}

/** Changes all three counters of every row once, `IN_FLIGHT` increments at a time. */
async function makeEveryRowDirty(bench: BenchApp, rows: number): Promise<void> {
  const total = rows * COUNTER_NAMES.length;
  let next = 0;
  const worker = async () => {
    for (let task = next++; task < total; task = next++) {
      const id = Math.floor(task / COUNTER_NAMES.length) + 1;
      const counter = task % COUNTER_NAMES.length;
      const by = 1 + (id % 5);
      const value = await bench.counters.increment(BenchPost, id, COUNTER_NAMES[counter], by);
      if (value !== databaseValues(id)[counter] + by) throw new Error(`post ${id} ${COUNTER_NAMES[counter]}: ${value}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/** One keyed change per row, each key a UUID (36 characters), `IN_FLIGHT` at a time; every one applied. */
async function rememberOneKeyPerRow(bench: BenchApp, rows: number): Promise<void> {
  let next = 1;
  const worker = async () => {
    for (let id = next++; id <= rows; id = next++) {
      const { applied } = await bench.counters.change(BenchPost, id, 'like_count', 1, { idempotencyKey: randomUUID() });
      if (!applied) throw new Error(`post ${id}: a fresh key was taken for a retry`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/** `OBJECT ENCODING`, size and TTL of a key, for the notes. */
async function describeKey(redis: Redis, key: string): Promise<string> {
  const [encoding, ttl, bytes] = await Promise.all([
    redis.object('ENCODING', key),
    redis.ttl(key),
    redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'),
  ]);
  return `${encoding}, ${bytes} bytes, ${ttl < 0 ? 'no TTL' : `TTL ${ttl} s`}`;
}

/** Runs `work` and returns how much `used_memory` grew, per row. */
async function usedMemoryGrowth(redis: Redis, rows: number, work: () => Promise<unknown>): Promise<number> {
  const before = await usedMemory(redis);
  await work();
  return ((await usedMemory(redis)) - before) / rows;
}

/** Bytes per row of the module's keys: row hashes, and the entity's per-shard keys shared by the rows. */
async function libraryBytes(redis: Redis, layout: Layout, rows: number) {
  const rowUsage = await memoryUsage(redis, layout.rowKeys);
  const shardUsage = await memoryUsage(redis, layout.shardKeys);
  if (rowUsage.keys !== rows) throw new Error(`${rowUsage.keys} of ${rows} row hashes in Redis`);
  return {
    rowHash: rowUsage.bytes / rows,
    shardKeys: shardUsage.bytes / rows,
    total: (rowUsage.bytes + shardUsage.bytes) / rows,
  };
}

/** The hand-rolled layout: three plain string keys per row, the same values, no TTL. */
async function baselineBytes(redis: Redis, prefix: string, rows: number) {
  const idOf = (index: number) => Math.floor(index / 3) + 1;
  const keyOf = (index: number) => `${prefix}:post:${idOf(index)}:${COUNTER_NAMES[index % 3]}`;
  const usedMemoryPerRow = await usedMemoryGrowth(redis, rows, () =>
    writeInChunks(redis, rows * 3, (pipeline, index) =>
      pipeline.set(keyOf(index), databaseValues(idOf(index))[index % 3]),
    ),
  );
  const usage = await memoryUsage(
    redis,
    Array.from({ length: rows * 3 }, (_, index) => keyOf(index)),
  );
  if (usage.keys !== rows * 3) throw new Error(`${usage.keys} of ${rows * 3} baseline keys`);
  return { perRow: usage.bytes / rows, usedMemoryPerRow };
}

/**
 * What-if: the clean hash with counters named by position (`v:0`, `v:1`, `v:2`), keys of the same
 * length (`:w:` for `:r:`), written next to the real ones, measured, deleted.
 */
async function positionalFieldBytes(redis: Redis, layout: Layout, rows: number): Promise<number> {
  const whatIfKey = (index: number) => layout.rowKeys[index].replace(/:r:(?=[^:]*$)/, ':w:');
  const fields = (id: number) => Object.fromEntries(databaseValues(id).map((value, c) => [`v:${c}`, value]));
  await writeInChunks(redis, rows, (pipeline, index) => pipeline.hset(whatIfKey(index), fields(index + 1)));
  const usage = await memoryUsage(
    redis,
    Array.from({ length: rows }, (_, index) => whatIfKey(index)),
  );
  await writeInChunks(redis, rows, (pipeline, index) => pipeline.unlink(whatIfKey(index)));
  return usage.bytes / rows;
}

async function measure(context: BenchContext) {
  const rows = context.quick ? 10_000 : 100_000;
  const redis = new Redis(REDIS_URL, RESP2);
  try {
    const prefix = await unusedPrefixOfDefaultLength(redis);
    return await withDatabase('sqlite', async (database) => {
      // No flush at all: neither scheduled nor on shutdown (it would write 100,000 rows while closing).
      const bench = await startBenchApp({
        database: database.options,
        topology: 'standalone',
        keyPrefix: prefix,
        counter: { flushEnabled: false, flushOnShutdown: false },
      });
      try {
        // Chunks of 500: after an insert TypeORM re-reads the rows' defaults with one OR per row, and
        // SQLite refuses an expression deeper than 1,000.
        await insertRows(bench.dataSource, BenchPost, rows, 500);
        await giveCountersValues(bench.dataSource);
        const layout = layoutOf(bench, rows);
        const sample = layout.rowKeys[41];

        let started = performance.now();
        const cleanGrowth = await usedMemoryGrowth(redis, rows, () => loadIntoRedis(bench.counters, BenchPost, rows));
        context.log(`loaded ${rows} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
        const clean = await libraryBytes(redis, layout, rows);
        const cleanRow = await describeKey(redis, sample);

        started = performance.now();
        const dirtyGrowth = await usedMemoryGrowth(redis, rows, () => makeEveryRowDirty(bench, rows));
        context.log(`${rows * 3} increments in ${((performance.now() - started) / 1000).toFixed(1)} s`);
        const dirty = await libraryBytes(redis, layout, rows);
        const dirtyMembers = (await Promise.all(layout.dirtySets.map((key) => redis.zcard(key)))).reduce(
          (a, b) => a + b,
          0,
        );
        if (dirtyMembers !== rows) throw new Error(`${dirtyMembers} of ${rows} rows in the dirty sets`);
        const dirtyRow = await describeKey(redis, sample);
        const dirtySet = await describeKey(redis, layout.dirtySets[0]);
        const pendingHash = await describeKey(redis, layout.pendingHashes[0]);

        // Remembered keys: the shards' idempotency records after one keyed change per row.
        started = performance.now();
        const keyedGrowth = await usedMemoryGrowth(redis, rows, () => rememberOneKeyPerRow(bench, rows));
        context.log(`${rows} keyed increments in ${((performance.now() - started) / 1000).toFixed(1)} s`);
        const records = await memoryUsage(redis, layout.idempotencyRecords);
        const remembered = (await Promise.all(layout.idempotencyRecords.map((key) => redis.zcard(key)))).reduce(
          (a, b) => a + b,
          0,
        );
        if (remembered !== rows) throw new Error(`${remembered} of ${rows} keys remembered`);
        const perKey = {
          bytes: records.bytes / rows,
          usedMemory: keyedGrowth,
          record: await describeKey(redis, layout.idempotencyRecords[0]),
        };

        // Last, so that their keys are not in the module's used_memory figures.
        const baseline = await baselineBytes(redis, prefix, rows);
        const positionalFields = await positionalFieldBytes(redis, layout, rows);

        return {
          rows,
          prefix,
          sample,
          clean,
          dirty,
          baseline,
          positionalFields,
          cleanGrowth,
          dirtyGrowth,
          cleanRow,
          dirtyRow,
          dirtySet,
          pendingHash,
          perKey,
        };
      } finally {
        await bench.close();
        await deleteKeys(redis, prefix);
      }
    });
  } finally {
    redis.disconnect();
  }
}

type Measured = Awaited<ReturnType<typeof measure>>;

const round = (bytes: number) => Math.round(bytes * 10) / 10;

function tableRow(label: string, library: Measured['clean'], usedMemoryPerRow: number, m: Measured): BenchRow {
  return {
    label,
    library: {},
    extra: {
      'library bytes/row': round(library.total),
      'row hash': round(library.rowHash),
      'shard keys': round(library.shardKeys),
      'baseline bytes/row': round(m.baseline.perRow),
      'used_memory Δ/row': round(usedMemoryPerRow),
    },
  };
}

function notes(m: Measured): string[] {
  return [
    "Standalone Redis and SQLite: its table path is `bench_post`, as a user's (a PostgreSQL schema of the run's own would " +
      `lengthen every key). Key prefix \`${m.prefix}\`: unused on the server and as long as the default \`ctr\`, so keys are as ` +
      `long as a user's, e.g. \`${m.sample}\`. Module defaults (64 shards) except flushing, which is off (scheduled and on shutdown).`,
    `Row hash clean: ${m.cleanRow}; dirty: ${m.dirtyRow} (the same three v: fields: a row holds no pending change). ` +
      `One shard's dirty set (about ${Math.round(m.rows / 64).toLocaleString('en-US')} members): ${m.dirtySet}; its pending hash ` +
      `(a field "<id> <counter>" per changed counter, about ${Math.round((3 * m.rows) / 64).toLocaleString('en-US')}): ${m.pendingHash}.`,
    "MEMORY USAGE counts the key, its value and its main-dictionary entry, not the main dictionary's bucket slot (8–16 bytes " +
      'per key) nor, for a key with a TTL (every clean row), its expires-dictionary entry (a 24-byte dictEntry plus 8–16 bytes ' +
      `of buckets). used_memory Δ includes them (clean: ${round(m.cleanGrowth - m.clean.total)} bytes per row above MEMORY USAGE ` +
      "in this run), but the server is shared with other users: approximate. The dirty row's Δ is loading plus changing.",
    `What-if, measured in this run: the same clean hash with counters named by position (\`v:0\`, \`v:1\`, \`v:2\` instead of ` +
      `\`v:like_count\` …) takes ${round(m.positionalFields)} bytes per row instead of ${round(m.clean.rowHash)}.`,
    `Baseline used_memory Δ: ${round(m.baseline.usedMemoryPerRow)} bytes per row (three keys, no TTL). A hand-rolled layout ` +
      'that flushed to SQL would also need some record of dirty rows, not included.',
  ];
}

export const memoryPerRow: BenchScenario = {
  id: 5,
  slug: 'memory',
  title: 'Memory per counted row',
  async run(context) {
    const m = await measure(context);
    const checks: TargetCheck[] = [
      {
        target: `≤ ${CLEAN_TARGET_BYTES} bytes of Redis per clean row (three counters)`,
        actual: `${Math.round(m.clean.total)} bytes`,
        met: m.clean.total <= CLEAN_TARGET_BYTES,
      },
    ];
    return {
      library:
        `the keys the module keeps for ${m.rows.toLocaleString('en-US')} \`BenchPost\` rows (3 counters each, realistic values) ` +
        'once `getMany` loaded them (clean) and once each counter of each row was incremented (dirty): `MEMORY USAGE … SAMPLES 0` ' +
        "summed over every row hash and the entity's per-shard keys (dirty set, pending hash, generation, lease, batch), divided by the rows.",
      baseline:
        'a hand-rolled layout of three plain string keys per row (`<prefix>:post:<id>:like_count` …, `SET` to the same values, ' +
        'no TTL), measured the same way.',
      unit: 'bytes',
      rows: [
        tableRow(`clean: ${m.rows.toLocaleString('en-US')} rows loaded, no change waiting`, m.clean, m.cleanGrowth, m),
        tableRow(
          'dirty: all three counters of every row changed, not flushed',
          m.dirty,
          m.cleanGrowth + m.dirtyGrowth,
          m,
        ),
        {
          label: 'remembered idempotency keys (a UUID each), bytes per key',
          library: {},
          extra: {
            'library bytes/key': round(m.perKey.bytes),
            'used_memory Δ/key': round(m.perKey.usedMemory),
          },
        },
      ],
      checks,
      notes: [
        ...notes(m),
        `Remembered idempotency keys: after one keyed change per row (a UUID key each, module default lifetime of a day), ` +
          `the entity's 64 idempotency records (sorted sets of "<id> <key>" by expiry) take ${round(m.perKey.bytes)} bytes ` +
          `per remembered key (MEMORY USAGE); used_memory grew by ${round(m.perKey.usedMemory)} bytes per keyed change. ` +
          `One record: ${m.perKey.record}.`,
      ],
    };
  },
};
