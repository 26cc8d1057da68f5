import calculateSlot, { generateMulti } from 'cluster-key-slot';
import type { Cluster, Command } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterDatabaseUnavailableError, CounterLedgerEntry } from '../../lib/index.js';
import { DataLossRepairer } from '../../lib/reconcile/data-loss.repairer.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { tapClusterNodes, tapCommands, type SentCommand } from '../../support/command-tap.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { Article, ArticleBeforeViewCount, ENTITIES, Remark } from '../fixtures/entities.js';
import { Reply, SOURCED_ENTITIES, Topic } from '../fixtures/sourced-entities.js';
import { Post, WINDOWED_ENTITIES } from '../fixtures/windowed-entities.js';
import { ROLLING_COUNT_ENTITIES, Story } from '../fixtures/rolling-count-entities.js';
import { deleteKeys, masters, uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles, insertRemarks, remarkCounts, spreadIds } from '../../support/rows.js';
import { claimedBatchId, claimedIds, replicasAwaited, scriptArguments, scriptsBySha } from '../support/script-calls.js';
import { ScriptKeyAudit } from '../support/script-key-audit.js';
import { listedReplicas, slotOwners } from '../../support/slot-owners.js';
import { inspectionClient, moduleClient, TOPOLOGIES } from '../support/topologies.js';

/** Few shards and small batches: several rows per shard, so a shard's flush takes several batches. */
const SHARDS = 4;
const BATCH_SIZE = 2;
const LEASE_MS = 300;
const RETENTION_MS = 60_000;
const ARTICLES = 12;
const REMARKS = 4;
/** Articles changed again before the flush that crashes. */
const CRASHED_ARTICLES = 4;

/** The scripts the store registers (lib/redis/script-commands.ts); the walk below must send each one. */
const LIBRARY_SCRIPTS = [
  'nestjsCounterIncrement',
  'nestjsCounterRead',
  'nestjsCounterSeed',
  'nestjsCounterClaim',
  'nestjsCounterAck',
  'nestjsCounterGiveBack',
  'nestjsCounterRelease',
  'nestjsCounterRenew',
  'nestjsCounterBucketRead',
  'nestjsCounterBucketScan',
  'nestjsCounterRollingCountRead',
];

/**
 * What ioredis itself sends to keep its connections: the ready check (INFO), its library name and
 * version (CLIENT SETINFO, which Redis before 7.2 refuses; ioredis ignores the refusal), READONLY on a
 * connection to a replica, and the slot map refresh (CLUSTER SLOTS) the module's client runs every 5 s.
 */
const connectionSetup = ({ name, args }: SentCommand) =>
  (name === 'info' && args.length === 0) ||
  (name === 'client' && args[0]?.toUpperCase() === 'SETINFO') ||
  (name === 'readonly' && args.length === 0) ||
  (name === 'cluster' && args[0]?.toUpperCase() === 'SLOTS');

/** A crash, as the flusher sees it: from this call on, the process does nothing more. */
class SimulatedCrash extends Error {}

interface Recorded extends SentCommand {
  /** The library script a call ran, by its SHA; undefined for other commands. */
  script?: string;
  reply?: unknown;
  error?: Error;
}

// G5: on a Redis Cluster every command the module sends, scripts included, touches one hash slot. The
// module's client is recorded, on each node connection, while every library path runs; the tests then
// check the record. The cluster refuses declared keys of several slots (CROSSSLOT) and undeclared keys
// of another node, but Redis 7.0 runs a script that touches an undeclared key of another slot on the
// same node: so what each script ran inside Redis is watched too (MONITOR), and every key it touched
// must be one its call declared (Redis's scripting contract, which proxies rely on).
describe.runIf(TOPOLOGIES.includes('cluster'))('hash slots of every command on a Redis Cluster', () => {
  const prefix = uniquePrefix('slots');
  const keys = new CounterKeys(prefix, SHARDS);
  const shardOf = (id: string | number) => keys.shardOf(encodeURIComponent(String(id)));
  /** Every command, as the node connection it went out on saw it. */
  const sent: SentCommand[] = [];
  /** The commands the cluster routed itself (tapped on the cluster client). */
  const routed = new Set<Command>();
  let record: Recorded[];
  let registered: string[];
  let scripts: Map<string, string>;
  /** Rows in the batch whose write crashed (and which a later flush recovered). */
  let crashedRows: number;
  let redis: Cluster;
  /** The module's client: ours, so that every command it sends is recorded, from bootstrap on. */
  let client: Cluster;
  let untap: Array<() => void> = [];
  let audit: ScriptKeyAudit;
  let database: TestDatabase;
  let counter: CounterApp;

  /** Batches a flush of these dirty rows takes: each shard's rows, BATCH_SIZE at a time. */
  const batchesFor = (ids: Array<string | number>) => {
    const perShard = new Map<number, number>();
    for (const id of ids) perShard.set(shardOf(id), (perShard.get(shardOf(id)) ?? 0) + 1);
    return [...perShard.values()].reduce((sum, rows) => sum + Math.ceil(rows / BATCH_SIZE), 0);
  };

  const flush = async () => {
    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    return report;
  };

  /** Every library path, with exact checks of what each one returns and writes. */
  async function walkEveryPath(): Promise<void> {
    const { dataSource, counters } = counter;
    const articleIds = await insertArticles(
      dataSource,
      Array.from({ length: ARTICLES }, (_, i) => i),
      0,
      spreadIds(keys, ARTICLES),
    );
    const remarkIds = await insertRemarks(
      dataSource,
      Array.from({ length: REMARKS }, (_, i) => 5 + i),
      prefix,
    );
    const likes = new Map(articleIds.map((id, i) => [id, i]));
    const replies = new Map(remarkIds.map((id, i) => [id, 5 + i]));
    // 12 rows over 4 shards: some shard holds more rows than one batch takes.
    expect(batchesFor(articleIds)).toBeGreaterThan(new Set(articleIds.map(shardOf)).size);

    // Increments of unseeded rows (read, seed, increment), then of a seeded one.
    for (const [i, id] of articleIds.entries()) {
      likes.set(id, likes.get(id)! + i + 1);
      expect(await counters.increment(Article, id, 'like_count', i + 1)).toBe(likes.get(id));
    }
    for (const id of remarkIds) {
      replies.set(id, replies.get(id)! + 2);
      expect(await counters.increment(Remark, id, 'reply_count', 2)).toBe(replies.get(id));
    }
    likes.set(articleIds[0], likes.get(articleIds[0])! + 4);
    expect(await counters.increment(Article, articleIds[0], 'like_count', 4)).toBe(likes.get(articleIds[0]));
    // Increments of one turn of the event loop, over rows of several shards: one call per slot.
    const together = await Promise.all(articleIds.map((id) => counters.increment(Article, id, 'like_count')));
    for (const id of articleIds) likes.set(id, likes.get(id)! + 1);
    expect(together).toEqual(articleIds.map((id) => likes.get(id)));

    // Keyed changes (G8): each row's shard record declared with the row; a retry applies nothing.
    const keyed = await Promise.all(
      articleIds.map((id) => counters.change(Article, id, 'like_count', 1, { idempotencyKey: `walk-${id}` })),
    );
    for (const id of articleIds) likes.set(id, likes.get(id)! + 1);
    expect(keyed).toEqual(articleIds.map((id) => ({ value: likes.get(id), applied: true })));
    expect(
      await counters.change(Article, articleIds[0], 'like_count', 1, { idempotencyKey: `walk-${articleIds[0]}` }),
    ).toEqual({ value: likes.get(articleIds[0]), applied: false });

    // A set: the difference goes in as a change of the row.
    expect(await counters.set(Article, articleIds[1], 'like_count', 500)).toBe(likes.get(articleIds[1]));
    likes.set(articleIds[1], 500);

    // Reads: one row, many rows, entities overlaid in place; the backlog.
    expect(await counters.get(Article, articleIds[3], 'like_count')).toBe(likes.get(articleIds[3]));
    const many = await counters.getMany(Article, articleIds, ['like_count']);
    expect(articleIds.map((id) => many.get(id)!.like_count)).toEqual(articleIds.map((id) => likes.get(id)));
    const loaded = await dataSource.getRepository(Remark).findBy(remarkIds.map((id) => ({ id })));
    await counters.overlay(loaded);
    expect(loaded.map((remark) => [remark.id, remark.replyCount]).sort()).toEqual(
      remarkIds.map((id) => [id, replies.get(id)]).sort(),
    );
    expect((await counters.status()).pendingRows).toBe(ARTICLES + REMARKS);

    // A flush that takes several batches per shard, and prunes the ledger's old rows.
    const ledger = dataSource.getRepository(CounterLedgerEntry);
    const old = { batchId: `old-${prefix}`, entity: 'x', shard: 0, rowCount: 1 };
    await ledger.insert({ ...old, appliedAt: String(Date.now() - 2 * RETENTION_MS) });
    const flushed = await flush();
    // At least each shard's rows BATCH_SIZE at a time; more where a transaction's last claim takes only
    // what room is left in it.
    expect(flushed.batches).toBeGreaterThanOrEqual(batchesFor(articleIds) + batchesFor(remarkIds));
    expect(flushed.rows).toBe(ARTICLES + REMARKS);
    expect(await ledger.findOneBy({ batchId: old.batchId })).toBeNull();
    const stored = await articleCounts(dataSource, articleIds);
    expect(articleIds.map((id) => stored.get(id)!.likes)).toEqual(articleIds.map((id) => likes.get(id)));
    const storedRemarks = await remarkCounts(dataSource, remarkIds);
    expect(remarkIds.map((id) => storedRemarks.get(id))).toEqual(remarkIds.map((id) => replies.get(id)));

    // A flusher that dies after its claim: its batch is recovered once the lease has expired.
    for (const id of articleIds.slice(0, CRASHED_ARTICLES)) {
      likes.set(id, likes.get(id)! + 10);
      expect(await counters.increment(Article, id, 'like_count', 10)).toBe(likes.get(id));
    }
    vi.spyOn(counter.app.get(FlushStore), 'release').mockRejectedValue(new SimulatedCrash('release'));
    const apply = vi
      .spyOn(counter.app.get(CounterDatabase), 'applyBatches')
      .mockRejectedValueOnce(new SimulatedCrash('applyBatches'));
    expect((await counters.flush()).error).toBeInstanceOf(SimulatedCrash);
    const crashedBatches = apply.mock.calls[0][0];
    crashedRows = crashedBatches.reduce((sum, batch) => sum + batch.rows.ids.length, 0);
    vi.restoreAllMocks();
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 100));
    expect((await flush()).recoveredBatches).toBe(crashedBatches.length);
    const recovered = await articleCounts(dataSource, articleIds);
    expect(articleIds.map((id) => recovered.get(id)!.likes)).toEqual(articleIds.map((id) => likes.get(id)));

    // A transaction that outlasts the lease: the flush renews the leases it holds, one call per slot.
    const slow = articleIds[9];
    likes.set(slow, likes.get(slow)! + 2);
    expect(await counters.increment(Article, slow, 'like_count', 2)).toBe(likes.get(slow));
    const counterDatabase = counter.app.get(CounterDatabase);
    const realApply = counterDatabase.applyBatches.bind(counterDatabase);
    vi.spyOn(counterDatabase, 'applyBatches').mockImplementationOnce(async (batches) => {
      await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS));
      return realApply(batches);
    });
    const renewed = await flush();
    vi.restoreAllMocks();
    expect([renewed.batches, renewed.lostLeases]).toEqual([1, 0]);
    expect((await articleCounts(dataSource, [slow])).get(slow)!.likes).toBe(likes.get(slow));

    // A transaction that fails with the database gone: its shards' leases are released at once, and the
    // next flush writes their batches.
    const retried = articleIds[7];
    likes.set(retried, likes.get(retried)! + 6);
    expect(await counters.increment(Article, retried, 'like_count', 6)).toBe(likes.get(retried));
    vi.spyOn(counter.app.get(CounterDatabase), 'applyBatches').mockRejectedValueOnce(
      new CounterDatabaseUnavailableError('gone'),
    );
    expect((await counters.flush()).error).toBeInstanceOf(CounterDatabaseUnavailableError);
    vi.restoreAllMocks();
    expect((await flush()).recoveredBatches).toBe(1);
    expect((await articleCounts(dataSource, [retried])).get(retried)!.likes).toBe(likes.get(retried));

    // A row deleted under pending deltas: the deltas are dropped, and its hash deleted.
    const doomed = articleIds[5];
    expect(await counters.increment(Article, doomed, 'like_count', 3)).toBe(likes.get(doomed)! + 3);
    await dataSource.getRepository(Article).delete(doomed);
    expect((await flush()).droppedRows).toBe(1);
    const doomedKey = keys.shard(dataSource.getMetadata(Article).tablePath, shardOf(doomed)).row(String(doomed));
    expect(await redis.exists(doomedKey)).toBe(0);

    // An instance deployed before view_count was counted gives its changes back before it writes; the
    // next claim by this one takes them.
    const older = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      redis: client,
      synchronize: false,
      entities: [ArticleBeforeViewCount],
      counter: { shards: SHARDS, flushBatchSize: BATCH_SIZE, flushLeaseMs: LEASE_MS, flushOnShutdown: false },
    });
    const viewed = articleIds[2];
    try {
      expect(await counters.increment(Article, viewed, 'view_count', 3)).toBe(3);
      const givenBack = await older.counters.flush();
      expect([givenBack.error, givenBack.batches]).toEqual([undefined, 0]);
    } finally {
      await older.close();
    }
    likes.set(viewed, likes.get(viewed)! + 1);
    expect(await counters.increment(Article, viewed, 'like_count', 1)).toBe(likes.get(viewed));
    expect((await flush()).rows).toBe(1);
    expect((await articleCounts(dataSource, [viewed])).get(viewed)).toEqual({ likes: likes.get(viewed), views: 3 });

    // Changes that cancel out: the claim finds nothing to write and the lease is released.
    const quiet = articleIds[1];
    expect(await counters.increment(Article, quiet, 'like_count', 1)).toBe(likes.get(quiet)! + 1);
    expect(await counters.decrement(Article, quiet, 'like_count', 1)).toBe(likes.get(quiet));
    const netZero = await flush();
    expect([netZero.batches, netZero.rows]).toEqual([0, 0]);
    expect((await counters.status()).pendingRows).toBe(0);

    // A recount: live values read with their versions, then the one that differs set to its source.
    const topics = await dataSource.getRepository(Topic).save([
      { replyCount: 4, viewCount: 0 },
      { replyCount: 0, viewCount: 0 },
    ]);
    const topicIds = topics.map((topic) => topic.id);
    await dataSource.getRepository(Reply).insert({ topicId: topicIds[0] });
    expect(await counters.recount(Topic, 'reply_count', { ids: topicIds })).toEqual({
      checked: 2,
      corrected: [{ id: topicIds[0], was: 4, now: 1 }],
      skipped: [],
      refused: [],
      cursor: null,
    });
    expect((await flush()).rows).toBe(1);
    // A windowed counter: its changes go to its buckets too, which a claim takes and a window reads.
    await dataSource.getRepository(Post).insert({ id: 1, viewCount: 0, likeCount: 0, shareCount: 0 });
    expect(await counters.increment(Post, 1, 'view_count', 3)).toBe(3);
    const lastDay = { since: Date.now() - 86_400_000 };
    expect(await counters.count(Post, 1, 'view_count', lastDay)).toBe(3);
    // A top scans every shard of the entity for the counter's waiting changes, each in its own slot.
    expect(await counters.top(Post, 'view_count', { ...lastDay, limit: 5 })).toEqual([{ id: 1, value: 3 }]);
    expect((await flush()).rows).toBe(1);
    expect(await counters.count(Post, 1, 'view_count', lastDay)).toBe(3);
    expect(await counters.top(Post, 'view_count', { ...lastDay, limit: 5 })).toEqual([{ id: 1, value: 3 }]);
    // An overlay of rolling counts reads the rows' changes, then the versions, a shard per call.
    const stories = dataSource.getRepository(Story);
    await stories.insert([{ id: 1 }, { id: 2 }]);
    expect(await counters.increment(Story, 2, 'view_count', 4)).toBe(4);
    const overlaid = await counters.overlay(await stories.find({ order: { id: 'ASC' } }), { windowed: true });
    expect(overlaid.map(({ id, viewsToday }) => [id, viewsToday])).toEqual([
      [1, 0],
      [2, 4],
    ]);
    // A loss of a shard's data with repairOnDataLoss: the claim that makes its generation key again
    // queues the repair, which is walked under the deployment's repair lease (repair keys of one slot).
    const repairing = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      redis: client,
      entities: SOURCED_ENTITIES,
      counter: {
        shards: SHARDS,
        flushLeaseMs: LEASE_MS,
        flushOnShutdown: false,
        repairOnDataLoss: true,
        databaseTimeoutMs: 2_000,
      },
    });
    try {
      const topics = repairing.dataSource.getRepository(Topic);
      const topic = ((await topics.insert({})).identifiers[0] as { id: number }).id;
      await repairing.dataSource.getRepository(Reply).insert({ topicId: topic });
      expect(await repairing.counters.increment(Topic, topic, 'reply_count')).toBe(1);
      expect((await repairing.counters.flush()).rows).toBe(1);
      await repairing.dataSource.getRepository(Reply).insert({ topicId: topic });
      const shard = keys.shard(repairing.dataSource.getMetadata(Topic).tablePath, shardOf(topic));
      await redis.del(shard.generation);
      await redis.del(shard.row(String(topic)));
      expect((await repairing.counters.flush()).error).toBeUndefined();
      expect((await repairing.counters.status()).lastRedisDataLoss?.entities).toEqual(['Topic']);
      await repairing.app.get(DataLossRepairer).idle;
      expect(await repairing.counters.get(Topic, topic, 'reply_count')).toBe(2);
    } finally {
      await repairing.close();
    }
  }

  beforeAll(async () => {
    redis = inspectionClient('cluster') as Cluster;
    client = moduleClient('cluster') as Cluster;
    // Connected first, so that the connection to every node exists and can be tapped.
    await masters(client);
    untap = [
      tapCommands(client, ({ command }) => routed.add(command)),
      tapClusterNodes(client, (command) => sent.push(command)),
    ];
    audit = await ScriptKeyAudit.start(redis);
    database = await createTestDatabase(DATABASES[0]);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      redis: client,
      entities: [...ENTITIES, ...SOURCED_ENTITIES, ...WINDOWED_ENTITIES, ...ROLLING_COUNT_ENTITIES],
      counter: {
        shards: SHARDS,
        flushBatchSize: BATCH_SIZE,
        flushLeaseMs: LEASE_MS,
        ledgerRetentionMs: RETENTION_MS,
        flushOnShutdown: false,
      },
    });
    await walkEveryPath();
    untap.forEach((restore) => restore());
    scripts = scriptsBySha();
    registered = [...scripts.values()].filter((name) => name.startsWith('nestjsCounter')).sort();
    const outcomes = await Promise.all(sent.map((command) => command.outcome));
    record = sent
      .map((command, i) => ({
        ...command,
        ...outcomes[i],
        script: command.name === 'evalsha' ? scripts.get(command.args[0]) : undefined,
      }))
      .filter((command) => !connectionSetup(command));
  });

  afterAll(async () => {
    untap.forEach((restore) => restore());
    audit?.stop();
    vi.restoreAllMocks();
    await counter?.close();
    await database?.drop();
    if (redis) await deleteKeys(redis, prefix);
    client?.disconnect();
    redis?.disconnect();
  });

  it('records every command the cluster routed at the node it reached', () => {
    const atNodes = new Set(sent.map(({ command }) => command));
    expect(routed.size).toBeGreaterThan(0);
    expect([...routed].filter((command) => !atNodes.has(command)).map(({ name }) => name)).toEqual([]);
  });

  it('sees no command fail, so none was refused with CROSSSLOT', () => {
    expect(record.filter(({ error }) => error).map(({ name, error }) => `${name}: ${error!.message}`)).toEqual([]);
  });

  it('sends every script the store registers (a script added later must be walked here too)', () => {
    expect(registered).toEqual(expect.arrayContaining(LIBRARY_SCRIPTS));
    expect([...new Set(record.flatMap(({ script }) => (script ? [script] : [])))].sort()).toEqual(registered);
    expect(record.filter(({ name, script }) => name === 'evalsha' && !script)).toEqual([]);
  });

  it("names the keys of one slot in every command; only WAIT and the servers' settings have none", () => {
    const crossSlot = record.filter((command) => command.keys.length > 0 && generateMulti(command.keys) < 0);
    expect(crossSlot.map(({ name, keys: commandKeys }) => [name, ...commandKeys])).toEqual([]);
    const keyless = record.filter((command) => command.keys.length === 0);
    // INFO memory: each master's eviction policy, read at bootstrap on its own connection. COMMAND INFO
    // waitaof and INFO: whether each node has WAITAOF and an AOF (aof-support.ts), read on its connection.
    const serverCommand = ({ name, args }: (typeof record)[number]) =>
      name === 'wait' ||
      (name === 'info' && ['memory', ''].includes(args.join(' '))) ||
      (name === 'command' && args.join(' ') === 'info waitaof');
    expect(keyless.filter((command) => !serverCommand(command)).map(({ name, args }) => [name, ...args])).toEqual([]);
  });

  it('sends every command to the node that serves the slot of its keys', async () => {
    const owner = await slotOwners(redis);
    const withKeys = record.filter((command) => command.keys.length > 0);
    expect(withKeys.length).toBeGreaterThan(0);
    const misrouted = withKeys.filter((command) => owner(generateMulti(command.keys)) !== command.node);
    expect(misrouted.map(({ name, node, keys: commandKeys }) => [name, node, ...commandKeys])).toEqual([]);
  });

  it('waits, after each claim that holds a batch and before its ack, for every replica of its node', async () => {
    const replicasOf = await listedReplicas(redis);
    const holding = record.flatMap((claim, index) => {
      const batchId = claim.script === 'nestjsCounterClaim' ? claimedBatchId(claim.reply) : undefined;
      return batchId ? [{ claim, index, batchId }] : [];
    });
    expect(holding.length).toBeGreaterThan(0);
    const waited = holding.map(({ claim, index, batchId }) => [
      claim.node,
      replicasAwaited(record, index, batchId, scripts),
    ]);
    expect(waited).toEqual(holding.map(({ claim }) => [claim.node, replicasOf(claim.node!)]));
    expect(holding.filter(({ claim }) => replicasOf(claim.node!) === 0)).toEqual([]);
  });

  it('runs each script over the keys its call declares, and no other key', async () => {
    const idsOfBatch = new Map<string, string[]>();
    let claimedRows = 0;
    for (const claim of record.filter(({ script }) => script === 'nestjsCounterClaim')) {
      const ids = claimedIds(claim.reply);
      const batchId = claimedBatchId(claim.reply);
      if (batchId) idsOfBatch.set(batchId, ids);
      claimedRows += ids.length;
    }
    // An ack's argv is batch id, token, release, k, k counter names, then the ids of rows missing from
    // the database, whose hashes it declares after the shard's five keys.
    let missingIds = 0;
    for (const ack of record.filter(({ script }) => script === 'nestjsCounterAck')) {
      const { keys: declared, argv } = scriptArguments(ack);
      const [batchId, , , counters] = argv;
      const missing = argv.slice(4 + Number(counters));
      expect(idsOfBatch.has(batchId)).toBe(true);
      expect(declared.slice(5)).toEqual(missing.map((id) => `${declared[0].slice(0, -':batch'.length)}:r:${id}`));
      missingIds += missing.length;
    }
    // Every claimed row was in a claim's reply: the first flush's, the crashed flush's, the crashed
    // batch's again when recovered, the row whose transaction outlasted the lease, the row whose
    // transaction failed and again when recovered, the deleted row's (which its ack also names as
    // missing), the row the older instance claimed and then this one, the recounted row, the windowed post, and the topic
    // flushed before its shard's data was lost.
    expect(claimedRows).toBe(ARTICLES + REMARKS + CRASHED_ARTICLES + crashedRows + 1 + 2 + 1 + 2 + 1 + 1 + 1);
    expect(missingIds).toBe(1);
    // What the scripts ran inside Redis: every library script, each command over declared keys only.
    const audited = (await audit.seen(redis)).filter(({ declared }) =>
      declared.some((key) => key.startsWith(`${prefix}:`)),
    );
    expect([...new Set(audited.map(({ script }) => script))].sort()).toEqual(registered);
    expect(audited.flatMap(({ commands }) => commands).length).toBeGreaterThan(10 * (ARTICLES + REMARKS));
    expect(await audit.undeclaredKeys(redis, audited)).toEqual([]);
  });

  it('is checked against a cluster that refuses declared keys of several slots, and keys of another node', async () => {
    const owner = await slotOwners(redis);
    const here = `${prefix}:{calibration}:a`;
    const candidates = Array.from({ length: 64 }, (_, i) => `${prefix}:{calibration-${i}}:b`);
    const elsewhere = candidates.find((key) => owner(calculateSlot(key)) !== owner(calculateSlot(here)))!;
    await expect(redis.eval("return redis.call('GET', KEYS[2])", 2, here, elsewhere)).rejects.toThrow(/CROSSSLOT/);
    await expect(redis.eval("return redis.call('GET', ARGV[1])", 1, here, elsewhere)).rejects.toThrow(/non local key/);
  });
});
