import { Logger } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Reply, SOURCED_ENTITIES, Topic } from '../fixtures/sourced-entities.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { deleteKeys } from '../../support/redis.js';
import { TARGETS } from '../support/topologies.js';

/** A gate the test opens: the flush's transaction waits at it, just before its COMMIT (or instead of it). */
interface CommitGate {
  /** Resolves once the flush's transaction has reached its COMMIT and waits there. */
  reached: Promise<void>;
  /** Lets the transaction go on: commit, or fail its COMMIT (the transaction is then rolled back). */
  open(outcome: 'commit' | 'fail'): void;
}

/**
 * Holds the next transaction the data source starts at its COMMIT, through TypeORM's public QueryRunner: the flush's
 * batch has been written inside the transaction, and nothing of it is visible to other connections yet.
 */
function holdNextCommit(dataSource: DataSource): CommitGate {
  let reached!: () => void;
  let open!: (outcome: 'commit' | 'fail') => void;
  const gate = new Promise<'commit' | 'fail'>((resolve) => (open = resolve));
  const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
  const create = dataSource.createQueryRunner.bind(dataSource);
  const held = new WeakSet<QueryRunner>();
  let armed = true;
  vi.spyOn(dataSource, 'createQueryRunner').mockImplementation((mode) => {
    const runner = create(mode);
    if (!armed || held.has(runner)) return runner;
    armed = false;
    held.add(runner);
    const commit = runner.commitTransaction.bind(runner);
    const spy = vi.spyOn(runner, 'commitTransaction').mockImplementation(async () => {
      spy.mockRestore();
      reached();
      if ((await gate) === 'fail') throw new Error('the connection was lost during COMMIT (injected by the test)');
      return commit();
    });
    return runner;
  });
  return { reached: reachedPromise, open };
}

async function replyCount(dataSource: DataSource, id: number): Promise<number> {
  const topic = await dataSource.getRepository(Topic).findOneByOrFail({ id });
  return topic.replyCount;
}

// G4 through faults: whatever the interleaving of a loss of Redis data with a flush in flight, once the flush
// has ended a live value equals the database value plus the changes pending, so that reads, recount and audit
// compare against the truth; a recount then ends at the source, in Redis and in the database (G9).
describe.each(TARGETS)('Redis data lost while a flush is in its transaction, on %s, %s', (database, topology) => {
  const suite = useCounterSuite({ database, topology }, 'midflush', { shards: 4 }, 1, SOURCED_ENTITIES);

  afterEach(() => vi.restoreAllMocks());

  /** A topic with `replies` replies, each counted: live value `replies`, database value 0. */
  async function topicWithReplies(replies: number): Promise<number> {
    const { dataSource, counters } = suite.counter;
    const { id } = (await dataSource.getRepository(Topic).insert({})).identifiers[0] as { id: number };
    for (let i = 0; i < replies; i++) {
      await dataSource.getRepository(Reply).insert({ topicId: id });
      await counters.increment(Topic, id, 'reply_count');
    }
    return id;
  }

  it('reloads the rows of a batch committed after the loss, so a recount neither over-counts nor misses', async () => {
    const { dataSource, counters } = suite.counter;
    vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const id = await topicWithReplies(5);
    const gate = holdNextCommit(dataSource);
    const flushing = counters.flush();
    await gate.reached;

    await deleteKeys(suite.redis, suite.prefix); // Redis loses the counters' data mid-transaction
    // A read now loads the row from the database, which has not seen the batch yet (SQLite's one connection
    // sees it inside the transaction).
    const whileInFlight = await counters.get(Topic, id, 'reply_count');
    expect([0, 5]).toContain(whileInFlight);
    gate.open('commit');
    expect((await flushing).rows).toBe(1);

    expect(await replyCount(dataSource, id)).toBe(5);
    expect(await counters.get(Topic, id, 'reply_count')).toBe(5);
    expect(await counters.recount(Topic, 'reply_count', { ids: [id] })).toMatchObject({ corrected: [] });
    expect((await counters.flush()).error).toBeUndefined();
    expect(await replyCount(dataSource, id)).toBe(5);
    expect(await counters.get(Topic, id, 'reply_count')).toBe(5);

    // Counting goes on from the truth.
    await dataSource.getRepository(Reply).insert({ topicId: id });
    expect(await counters.increment(Topic, id, 'reply_count')).toBe(6);
    expect((await counters.flush()).error).toBeUndefined();
    expect(await replyCount(dataSource, id)).toBe(6);
    expect(await counters.audit(Topic, 'reply_count', { ids: [id] })).toEqual({ checked: 1, drifted: [] });
  });

  it('reloads the rows of a batch rolled back after the loss, so the live value is the database value', async () => {
    const { dataSource, counters } = suite.counter;
    vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const id = await topicWithReplies(4);
    const gate = holdNextCommit(dataSource);
    const flushing = counters.flush();
    await gate.reached;

    await deleteKeys(suite.redis, suite.prefix);
    const whileInFlight = await counters.get(Topic, id, 'reply_count');
    expect([0, 4]).toContain(whileInFlight);
    gate.open('fail');
    expect((await flushing).failedShards).toBe(1);

    // The batch's changes went with Redis's data (G1's limit); what is live is what the database holds.
    expect(await replyCount(dataSource, id)).toBe(0);
    expect(await counters.get(Topic, id, 'reply_count')).toBe(0);
    expect(await counters.recount(Topic, 'reply_count', { ids: [id] })).toMatchObject({
      corrected: [{ id, was: 0, now: 4 }],
    });
    expect((await counters.flush()).error).toBeUndefined();
    expect(await replyCount(dataSource, id)).toBe(4);
    expect(await counters.get(Topic, id, 'reply_count')).toBe(4);
  });
});

describe.each(TARGETS)(
  'Redis data lost while an abandoned transaction commits late, on %s, %s',
  (database, topology) => {
    // The flush gives up waiting after 300 ms; the transaction itself goes on and commits later.
    const suite = useCounterSuite(
      { database, topology },
      'latecommit',
      { shards: 4, databaseTimeoutMs: 300 },
      1,
      SOURCED_ENTITIES,
    );

    afterEach(() => vi.restoreAllMocks());

    it('reloads the rows of the batch once its transaction commits', async () => {
      const { dataSource, counters } = suite.counter;
      vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const { id } = (await dataSource.getRepository(Topic).insert({})).identifiers[0] as { id: number };
      for (let i = 0; i < 3; i++) await counters.increment(Topic, id, 'view_count');
      const gate = holdNextCommit(dataSource);
      const report = await counters.flush();
      expect(report.error?.name).toBe('CounterDatabaseUnavailableError');
      await gate.reached;

      await deleteKeys(suite.redis, suite.prefix);
      expect([0, 3]).toContain(await counters.get(Topic, id, 'view_count'));
      gate.open('commit');
      // The late COMMIT is followed by the batch's acknowledgement, which finds the batch gone: the row reloads.
      const deadline = Date.now() + 5_000; // far beyond one commit and two Redis round trips
      while ((await replyOrViews(dataSource, id)) !== 3 && Date.now() < deadline) await pause(20);
      expect(await replyOrViews(dataSource, id)).toBe(3);
      let live = await counters.get(Topic, id, 'view_count');
      while (live !== 3 && Date.now() < deadline) {
        await pause(20);
        live = await counters.get(Topic, id, 'view_count');
      }
      expect(live).toBe(3);
      expect(await counters.increment(Topic, id, 'view_count')).toBe(4);
      expect((await counters.flush()).error).toBeUndefined();
      expect(await replyOrViews(dataSource, id)).toBe(4);
    });
  },
);

async function replyOrViews(dataSource: DataSource, id: number): Promise<number> {
  const topic = await dataSource.getRepository(Topic).findOneByOrFail({ id });
  return topic.viewCount;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
