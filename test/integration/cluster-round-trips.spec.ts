import { generateMulti } from 'cluster-key-slot';
import request from 'supertest';
import type { App } from 'supertest/types.js';
import { In } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { COUNTER_DEFAULTS, MAX_ROWS_PER_CALL } from '../../lib/counter.constants.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import type { CounterApp } from '../support/counter-app.js';
import { Article } from '../fixtures/entities.js';
import { insertArticleRows, spreadIds } from '../../support/rows.js';
import { LIVE_COUNTS_CONTROLLERS } from '../fixtures/live-counts.controller.js';
import { nodeOfTrip, type RoundTrip, type RoundTrips } from '../support/redis-traffic.js';
import { useRoundTripSuite } from '../support/round-trip-suite.js';
import { slotOwners } from '../../support/slot-owners.js';
import { TOPOLOGIES } from '../support/topologies.js';

/** Many shards, so that 100 rows spread over dozens of them, every slot group and every master of the cluster. */
const SHARDS = 64;
const ROWS = 100;

// A read of many rows costs one script call per slot touched (on a single Redis, one for all), sent in
// one round trip per Redis node that serves those shards (a pipeline, or the call alone when it is the
// only one): one on a single Redis, at most one per master on a cluster, never one per row (DESIGN.md:
// CounterInterceptor, G5).
describe.each(TOPOLOGIES)('round trips of a %s read of 100 rows', (topology) => {
  const suite = useRoundTripSuite(topology, 'trips', { shards: SHARDS }, LIVE_COUNTS_CONTROLLERS);
  const { prefix, redis } = suite;
  let counter: CounterApp;
  let roundTrips: RoundTrips;
  let articles: Article[];
  /** The like_count each article should read. */
  let likes: Map<number, number>;

  beforeAll(async () => {
    ({ counter, roundTrips } = suite);
    const repository = counter.dataSource.getRepository(Article);
    // Rows of unrelated ids, as a page sorted by anything but the id holds (consecutive ids share shards).
    const ids = spreadIds(new CounterKeys(prefix, SHARDS), ROWS);
    await insertArticleRows(
      counter.dataSource,
      ids.map((id, i) => ({ id, title: 'spread', likeCount: i, viewCount: 1_000 + i })),
    );
    articles = await repository.findBy({ id: In(ids) });
    articles.sort((a, b) => a.id - b.id);
    likes = new Map(articles.map((article) => [article.id, article.likeCount]));
  });

  /** The shards the 100 rows live in, their slots, and the nodes that serve those slots (per the server). */
  async function layout() {
    const keys = new CounterKeys(prefix, SHARDS);
    const table = counter.dataSource.getMetadata(Article).tablePath;
    const shards = [...new Set(articles.map((article) => keys.shardOf(encodeURIComponent(String(article.id)))))];
    const shardSlots = shards.map((shard) => keys.shard(table, shard).slot).sort((a, b) => a - b);
    // Two shards' tags can hash to one slot (with some table names they do): one read call serves both.
    const slots = [...new Set(shardSlots)];
    const owner = await slotOwners(redis);
    const nodes = [...new Set(slots.map(owner))].sort();
    return { shards, slots, owner, nodes };
  }

  /**
   * Checks the traffic of one read, made of `steps` rounds of script calls (`read`, then `seed` for rows
   * Redis did not hold): each step is one call for all the shards touched on a single Redis and one per
   * slot (a script's keys share one) on a cluster, in one round trip per node.
   */
  async function expectOneRoundTripPerNode(steps: Array<'read' | 'seed'>) {
    const { shards, slots, owner, nodes } = await layout();
    // 64 shards in 16 slot groups (slotsPerEntity): the 100 rows touch more shards than slots, and a
    // read costs one call per slot.
    expect(slots.length).toBeLessThanOrEqual(COUNTER_DEFAULTS.slotsPerEntity);
    expect(slots.length).toBeLessThan(shards.length);
    if (topology === 'cluster') {
      // The 100 rows really are spread: over more than one master, and there are only three.
      expect(nodes.length).toBeGreaterThan(1);
      expect(nodes.length).toBeLessThanOrEqual(3);
    } else {
      expect(nodes).toHaveLength(1);
    }
    const callsPerStep = topology === 'standalone' ? 1 : slots.length;
    const { trips } = roundTrips;
    const nodeOf = (trip: RoundTrip) => nodeOfTrip(trip, owner);
    expect(trips).toHaveLength(steps.length * nodes.length);
    expect(trips.map(nodeOf).sort()).toEqual(nodes.flatMap((node) => Array(steps.length).fill(node)).sort());
    expect(trips.flatMap((trip) => trip.commands)).toEqual(Array(steps.length * callsPerStep).fill('evalsha'));
    if (topology === 'standalone') return;
    // Each round trip's script calls name keys of one slot each, all served by the node it went to.
    const slotsSent = trips.flatMap((trip) =>
      trip.keys.map((commandKeys) => {
        const slot = generateMulti(commandKeys);
        expect(slot).toBeGreaterThanOrEqual(0);
        expect(owner(slot)).toBe(nodeOf(trip));
        return slot;
      }),
    );
    expect(slotsSent.sort((a, b) => a - b)).toEqual(steps.flatMap(() => slots).sort((a, b) => a - b));
  }

  const expectedValues = () =>
    new Map(
      articles.map((article) => [
        article.id,
        { like_count: likes.get(article.id)!, view_count: Number(article.viewCount) },
      ]),
    );

  it('getMany of unseeded rows: one read, then one seed (one script call per slot each), one round trip per node for each', async () => {
    roundTrips.reset();
    const values = await counter.counters.getMany(
      Article,
      articles.map((article) => article.id),
    );
    expect(values).toEqual(expectedValues());
    await expectOneRoundTripPerNode(['read', 'seed']);
  });

  it('getMany of seeded rows: one read (one script call per slot), one round trip per node', async () => {
    for (const [index, by] of [
      [0, 3],
      [37, 5],
      [99, 7],
    ] as const) {
      const id = articles[index].id;
      likes.set(id, likes.get(id)! + by);
      expect(await counter.counters.increment(Article, id, 'like_count', by)).toBe(likes.get(id));
    }
    roundTrips.reset();
    const values = await counter.counters.getMany(
      Article,
      articles.map((article) => article.id),
    );
    expect(values).toEqual(expectedValues());
    await expectOneRoundTripPerNode(['read']);
  });

  it('the interceptor overlay of a 100-row page: one script call per slot, one round trip per node', async () => {
    roundTrips.reset();
    const { body } = await request(counter.app.getHttpServer() as App)
      .get(`/live/page?title=spread&page=1&size=${ROWS}`)
      .expect(200);
    expect(body.total).toBe(ROWS);
    expect((body.items as Article[]).map(({ id, likeCount, viewCount }) => [id, likeCount, Number(viewCount)])).toEqual(
      articles.map((article) => [article.id, likes.get(article.id), Number(article.viewCount)]),
    );
    await expectOneRoundTripPerNode(['read']);
  });

  it('a getMany of 600 rows: script calls of whole shards, at most 250 rows each', async () => {
    const repository = counter.dataSource.getRepository(Article);
    const moreIds = spreadIds(new CounterKeys(prefix, SHARDS), 500);
    await insertArticleRows(
      counter.dataSource,
      moreIds.map((id, i) => ({ id, title: 'more', likeCount: 7 * i, viewCount: 3 })),
    );
    const more = await repository.findBy({ id: In(moreIds) });
    const all = [...articles, ...more];
    const keys = new CounterKeys(prefix, SHARDS);
    const table = counter.dataSource.getMetadata(Article).tablePath;
    const rowsPerShard = (rows: Article[]) => {
      const counts = new Map<string, number>();
      for (const { id } of rows) {
        const generation = keys.shard(table, keys.shardOf(encodeURIComponent(String(id)))).generation;
        counts.set(generation, (counts.get(generation) ?? 0) + 1);
      }
      return counts;
    };
    const read = rowsPerShard(all);
    expect(Math.max(...read.values())).toBeLessThan(MAX_ROWS_PER_CALL);

    roundTrips.reset();
    const values = await counter.counters.getMany(
      Article,
      all.map((article) => article.id),
      ['like_count'],
    );
    expect(all.map((article) => values.get(article.id)!.like_count)).toEqual(
      all.map((article) => likes.get(article.id) ?? article.likeCount),
    );
    // Read and seed calls declare each shard's generation and its rows; a seed call its batch key too.
    const calls = roundTrips.trips.flatMap((trip) => trip.keys);
    const isSeed = (callKeys: string[]) => callKeys.some((key) => key.endsWith(':batch'));
    const rowsOf = (callKeys: string[]) => callKeys.filter((key) => key.includes(':r:')).length;
    const readCalls = calls.filter((callKeys) => !isSeed(callKeys)).map(rowsOf);
    const seedCalls = calls.filter(isSeed).map(rowsOf);
    expect(readCalls.reduce((sum, rows) => sum + rows, 0)).toBe(600);
    expect(seedCalls.reduce((sum, rows) => sum + rows, 0)).toBe(500);
    expect(Math.max(...readCalls, ...seedCalls)).toBeLessThanOrEqual(MAX_ROWS_PER_CALL);
    if (topology === 'standalone') {
      // Calls are filled (not one per shard): each but the last is short of the limit by less than a shard.
      const largestShard = Math.max(...read.values());
      for (const rows of [readCalls, seedCalls]) {
        expect(rows.length).toBeGreaterThanOrEqual(2);
        expect(rows.slice(0, -1).filter((callRows) => callRows <= MAX_ROWS_PER_CALL - largestShard)).toEqual([]);
      }
    }
    // Every shard's rows in one call: each shard's generation key named once per step.
    for (const step of [calls.filter((callKeys) => !isSeed(callKeys)), calls.filter(isSeed)]) {
      const named = step.flat().filter((key) => key.endsWith(':gen'));
      expect(new Set(named).size).toBe(named.length);
    }
  });
});
