import { generateMulti } from 'cluster-key-slot';
import request from 'supertest';
import type { App } from 'supertest/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COUNTER_DEFAULTS } from '../lib/counter.constants.js';
import { CounterKeys } from '../lib/redis/keys.js';
import { startCounterApp, type CounterApp } from './support/counter-app.js';
import { createTestDatabase, DATABASES, type TestDatabase } from './support/databases.js';
import { Article } from './support/entities.js';
import { LIVE_COUNTS_CONTROLLERS } from './support/live-counts.controller.js';
import { deleteKeys, uniquePrefix } from './support/redis.js';
import { RoundTrips } from './support/redis-traffic.js';
import { slotOwners } from './support/slot-owners.js';
import { inspectionClient, moduleClient, TOPOLOGIES } from './support/topologies.js';

/** Many shards, so that 100 rows spread over dozens of them, every slot group and every master of the cluster. */
const SHARDS = 64;
const ROWS = 100;

// A read of many rows costs one script call per slot touched (on a single Redis, one for all), sent as
// one pipeline per Redis node that serves those shards: one round trip on a single Redis, at most one
// per master on a cluster, never one per row (DESIGN.md: CounterInterceptor, G5).
describe.each(TOPOLOGIES)('round trips of a %s read of 100 rows', (topology) => {
  const prefix = uniquePrefix('trips');
  const redis = inspectionClient(topology);
  /** The module's client: ours, so its traffic can be counted. */
  const client = moduleClient(topology);
  let database: TestDatabase;
  let counter: CounterApp;
  let roundTrips: RoundTrips;
  let articles: Article[];
  /** The like_count each article should read. */
  let likes: Map<number, number>;

  beforeAll(async () => {
    database = await createTestDatabase(DATABASES[0]);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      redis: client,
      counter: { shards: SHARDS },
      controllers: LIVE_COUNTS_CONTROLLERS,
    });
    const repository = counter.dataSource.getRepository(Article);
    articles = await repository.save(
      Array.from({ length: ROWS }, (_, i) => repository.create({ title: 'spread', likeCount: i, viewCount: 1_000 + i })),
    );
    articles.sort((a, b) => a.id - b.id);
    likes = new Map(articles.map((article) => [article.id, article.likeCount]));
    roundTrips = new RoundTrips(client, prefix);
  });

  afterAll(async () => {
    roundTrips?.stop();
    await counter?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    client.disconnect();
    redis.disconnect();
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
    return { shards, shardSlots, slots, owner, nodes };
  }

  /**
   * Checks the traffic of one read, made of `steps` rounds of script calls: a `seed` step is one call
   * per shard touched, a `read` step one call for all of them on a single Redis and one per shard (a
   * script's keys share one slot) on a cluster. Each step is one pipeline per node.
   */
  async function expectOnePipelinePerNode(steps: Array<'read' | 'seed'>) {
    const { shards, shardSlots, slots, owner, nodes } = await layout();
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
    const slotsOf = (step: 'read' | 'seed') => (step === 'read' ? slots : shardSlots);
    const callsOf = (step: 'read' | 'seed') =>
      step === 'read' && topology === 'standalone' ? 1 : step === 'read' ? slots.length : shards.length;
    expect(roundTrips.single).toEqual([]);
    expect(roundTrips.pipelines).toHaveLength(steps.length * nodes.length);
    expect([...roundTrips.pipelineNodes].sort()).toEqual(nodes.flatMap((node) => Array(steps.length).fill(node)).sort());
    expect(roundTrips.pipelines.flat()).toEqual(Array(steps.reduce((sum, step) => sum + callsOf(step), 0)).fill('evalsha'));
    if (topology === 'standalone') return;
    // Each pipeline's script calls name keys of one shard each, all served by the node it went to.
    const slotsSent = roundTrips.pipelineKeys.flatMap((commands, i) =>
      commands.map((commandKeys) => {
        const slot = generateMulti(commandKeys);
        expect(slot).toBeGreaterThanOrEqual(0);
        expect(owner(slot)).toBe(roundTrips.pipelineNodes[i]);
        return slot;
      }),
    );
    expect(slotsSent.sort((a, b) => a - b)).toEqual(steps.flatMap(slotsOf).sort((a, b) => a - b));
  }

  const expectedValues = () =>
    new Map(
      articles.map((article) => [article.id, { like_count: likes.get(article.id)!, view_count: Number(article.viewCount) }]),
    );

  it('getMany of unseeded rows: one read, then one seed per shard, one pipeline per node for each', async () => {
    roundTrips.reset();
    const values = await counter.counters.getMany(Article, articles.map((article) => article.id));
    expect(values).toEqual(expectedValues());
    await expectOnePipelinePerNode(['read', 'seed']);
  });

  it('getMany of seeded rows: one read (one script call per slot), one pipeline per node', async () => {
    for (const [index, by] of [[0, 3], [37, 5], [99, 7]] as const) {
      const id = articles[index].id;
      likes.set(id, likes.get(id)! + by);
      expect(await counter.counters.increment(Article, id, 'like_count', by)).toBe(likes.get(id));
    }
    roundTrips.reset();
    const values = await counter.counters.getMany(Article, articles.map((article) => article.id));
    expect(values).toEqual(expectedValues());
    await expectOnePipelinePerNode(['read']);
  });

  it('the interceptor overlay of a 100-row page: one script call per slot, one pipeline per node', async () => {
    roundTrips.reset();
    const { body } = await request(counter.app.getHttpServer() as App)
      .get(`/live/page?title=spread&page=1&size=${ROWS}`)
      .expect(200);
    expect(body.total).toBe(ROWS);
    expect((body.items as Article[]).map(({ id, likeCount, viewCount }) => [id, likeCount, Number(viewCount)])).toEqual(
      articles.map((article) => [article.id, likes.get(article.id), Number(article.viewCount)]),
    );
    await expectOnePipelinePerNode(['read']);
  });
});
