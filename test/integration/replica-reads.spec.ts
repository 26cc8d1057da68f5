import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { Reply, SOURCED_ENTITIES, Topic } from '../fixtures/sourced-entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { deleteKeys, keysEndingWith, testRedis, uniquePrefix } from '../../support/redis.js';
import {
  createReplicatedTestDatabase,
  REPLICATED_DATABASES,
  type ReplicatedTestDatabase,
} from '../support/replicated-database.js';

// G4 (consistency): with TypeORM `replication`, the reads the counters' correctness depends on (loading
// rows, the ledger of a recovered batch, the walk and the sources of recount and audit) go to the primary.
// The "replica" here is another database holding stale values, so a read routed to it shows.
describe.each(REPLICATED_DATABASES)('reads from the primary under replication on %s', (databaseName) => {
  const redis = testRedis();
  const prefix = uniquePrefix('replica');
  let database: ReplicatedTestDatabase;
  let counter: CounterApp;

  beforeAll(async () => {
    database = await createReplicatedTestDatabase(databaseName, SOURCED_ENTITIES);
    // A short lease: a batch whose acknowledgement failed is taken over by the next flush soon after.
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      entities: SOURCED_ENTITIES,
      counter: { flushLeaseMs: 1000 },
    });
  });

  afterAll(async () => {
    await counter?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  afterEach(() => vi.restoreAllMocks());

  /** Topics on the primary with `replies` reply rows each; on the replica (if `onReplica`) the same ids, stale: 0 and no replies. */
  async function insertTopics(replies: number[], onReplica: boolean[]): Promise<number[]> {
    const ids = await database.onPrimary(counter.dataSource, async (manager) => {
      const saved: number[] = [];
      for (const count of replies) {
        const topic = await manager.getRepository(Topic).save({ replyCount: 0, viewCount: 0 });
        if (count > 0) {
          await manager.getRepository(Reply).insert(Array.from({ length: count }, () => ({ topicId: topic.id })));
        }
        saved.push(topic.id);
      }
      return saved;
    });
    for (const [index, id] of ids.entries()) {
      if (onReplica[index]) await database.replica.getRepository(Topic).insert({ id, replyCount: 0, viewCount: 0 });
    }
    return ids;
  }

  const storedOnPrimary = (ids: number[]) =>
    database.onPrimary(counter.dataSource, async (manager) => {
      const rows = await manager.getRepository(Topic).find({ order: { id: 'ASC' } });
      const byId = new Map(rows.map((row) => [row.id, row.replyCount]));
      return ids.map((id) => byId.get(id));
    });

  /** Drops the row's hash from Redis, as its TTL would: the next read loads it from the database. */
  async function forgetRow(id: number) {
    const [key] = await keysEndingWith(redis, prefix, `:r:${id}`);
    expect(key).toBeDefined();
    await redis.del(key);
  }

  it('loads a row from the primary after its batch was flushed, never from a stale replica', async () => {
    const { counters } = counter;
    const [id] = await insertTopics([4], [true]);
    for (let i = 0; i < 3; i++) await counters.increment(Topic, id, 'reply_count');
    expect((await counters.flush()).error).toBeUndefined();
    expect(await storedOnPrimary([id])).toEqual([3]);

    await forgetRow(id);
    expect(await counters.get(Topic, id, 'reply_count')).toBe(3);
    expect(await counters.increment(Topic, id, 'reply_count')).toBe(4);
    expect((await counters.flush()).error).toBeUndefined();
    expect(await storedOnPrimary([id])).toEqual([4]);
    expect(await counters.get(Topic, id, 'reply_count')).toBe(4);

    // set() loads the row as increment does.
    await forgetRow(id);
    expect(await counters.set(Topic, id, 'reply_count', 4)).toBe(4);
    expect((await counters.flush()).rows).toBe(0);
  });

  it("acknowledges a batch found committed in the primary's ledger, without writing it again", async () => {
    const { counters, app } = counter;
    const [id] = await insertTopics([1], [true]);
    expect(await counters.increment(Topic, id, 'reply_count')).toBe(1);
    // The batch commits, then its acknowledgement fails: it stays claimed in Redis.
    const failure = new Error('Redis went away before the ack');
    vi.spyOn(app.get(FlushStore), 'ack').mockRejectedValueOnce(failure);
    expect((await counters.flush()).error).toBe(failure);
    expect(await storedOnPrimary([id])).toEqual([1]);

    // The replica's ledger lacks the batch: only the primary's tells the recovery not to write it again.
    const write = vi.spyOn(app.get(CounterDatabase), 'applyBatches');
    const deadline = Date.now() + 10_000; // ten lease lengths: the lease left behind runs out within one
    let recovered = 0;
    while (recovered === 0 && Date.now() < deadline) {
      const report = await counters.flush();
      expect(report.error).toBeUndefined();
      recovered += report.recoveredBatches;
      if (recovered === 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(recovered).toBe(1);
    expect(write).not.toHaveBeenCalled();
    expect(await keysEndingWith(redis, prefix, ':batch')).toEqual([]);
    expect(await storedOnPrimary([id])).toEqual([1]);
    expect(await counters.get(Topic, id, 'reply_count')).toBe(1);
  });

  it("recounts and audits against the primary's source, walking the primary's rows", async () => {
    const { counters } = counter;
    // The topics of the tests above are at their source. Of these, the replica has the first two (stale:
    // no replies) and has not seen the third yet.
    const before = await counters.audit(Topic, 'reply_count');
    const [exact, stale, unseen] = await insertTopics([3, 2, 2], [true, true, false]);
    await counters.set(Topic, exact, 'reply_count', 3);
    await counters.set(Topic, stale, 'reply_count', 9);

    expect(await counters.audit(Topic, 'reply_count', { ids: [exact, stale, unseen] })).toEqual({
      checked: 3,
      drifted: [
        { id: stale, live: 9, source: 2 },
        { id: unseen, live: 0, source: 2 },
      ],
    });
    expect(await counters.recount(Topic, 'reply_count')).toEqual({
      checked: before.checked + 3,
      corrected: [
        { id: stale, was: 9, now: 2 },
        { id: unseen, was: 0, now: 2 },
      ],
      skipped: [],
      refused: [],
      cursor: null,
    });
    expect((await counters.flush()).error).toBeUndefined();
    expect(await storedOnPrimary([exact, stale, unseen])).toEqual([3, 2, 2]);
    expect(await counters.audit(Topic, 'reply_count')).toEqual({ checked: before.checked + 3, drifted: [] });
  });
});
