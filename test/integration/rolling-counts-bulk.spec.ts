import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { Clip, Story } from '../fixtures/rolling-count-entities.js';
import { nodeOfTrip, RoundTrips } from '../support/redis-traffic.js';
import {
  SHARDS,
  useRollingCountsSuite,
  windows,
  type ClipBody,
  type StoryBody,
} from '../support/rolling-counts-suite.js';
import { scriptsBySha } from '../support/script-calls.js';
import { slotOwners } from '../../support/slot-owners.js';
import { moduleClient, TARGETS } from '../support/topologies.js';

// The overlay of rolling counts reads in bulk (one statement per entity type, one script call per shard
// touched, two round trips per Redis node) and stays exact while flushes move changes under it (G11).
describe.each(TARGETS)('rolling counts overlaid in bulk on %s, %s', (databaseName, topology) => {
  const suite = useRollingCountsSuite(databaseName, topology, 'rolling-counts-bulk');
  const { counters, newStories, get, flush, unique } = suite;

  it('never counts a change twice nor misses one while flushes move changes under the reads', async () => {
    const [id] = await newStories(1);
    let started = 0;
    let resolved = 0;
    let stop = false;
    const increments = (async () => {
      for (let i = 0; i < 150; i++) {
        started++;
        await counters().increment(Story, id, 'view_count', 1);
        resolved++;
      }
      stop = true;
    })();
    const flushes = (async () => {
      while (!stop) await flush();
    })();
    const seen: Array<{ low: number; value: number; high: number }> = [];
    while (!stop) {
      const low = resolved;
      const { body } = await get(`/rolling/stories/${id}`);
      seen.push({ low, value: (body as StoryBody).viewsToday!, high: started });
    }
    await Promise.all([increments, flushes]);
    // Each read counts every change acknowledged before it began, and none not yet made when it ended.
    expect(seen.filter(({ low, value, high }) => value < low || value > high)).toEqual([]);
    expect(seen.length).toBeGreaterThan(0);
    await flush();
    expect(windows((await get(`/rolling/stories/${id}`)).body as StoryBody)).toEqual({
      id,
      viewsToday: 150,
      viewsThisWeek: 150,
    });
  });

  it('overlays 1,100 rows through the service, more than one statement and one script call hold', async () => {
    const ids = Array.from({ length: 1_100 }, (_, i) => 100_000 + i);
    const stories = suite.counter.dataSource.getRepository(Story);
    for (let from = 0; from < ids.length; from += 100) {
      await stories.insert(ids.slice(from, from + 100).map((id) => ({ id, title: 'many' })));
    }
    const changed = [0, 249, 250, 999, 1_000, 1_099];
    for (const i of changed.slice(0, 3)) await counters().increment(Story, ids[i], 'view_count', i + 1);
    await flush();
    for (const i of changed) await counters().increment(Story, ids[i], 'view_count', 1);
    const loaded = await stories.find({ where: { title: 'many' }, order: { id: 'ASC' } });
    const overlaid = await counters().overlay(loaded, { windowed: true });
    expect(overlaid).toBe(loaded);
    // The first three changed before the flush and after it, the others after it only.
    const changes = new Map(changed.map((i, n) => [i, n < 3 ? i + 2 : 1]));
    const expected = (i: number) => changes.get(i) ?? 0;
    expect(loaded.map(({ id, viewsToday, viewsThisWeek }) => [id, viewsToday, viewsThisWeek])).toEqual(
      ids.map((id, i) => [id, expected(i), expected(i)]),
    );
  });

  it('reads a page of two entity types with one script call per shard touched, before the statement and after', async () => {
    // An app on a client of the test's own, whose round trips are counted.
    const client = moduleClient(topology);
    const app = await suite.startOther({ redis: client });
    const { keyPrefix } = app;
    // Ids in runs of 100 share a shard: these spread over every shard.
    const storyIds = Array.from({ length: 40 }, (_, i) => 10_000 + 100 * i);
    const clipIds = Array.from({ length: 40 }, (_, i) => `bulk-${unique()}-${i}`);
    await suite.counter.dataSource.getRepository(Story).insert(storyIds.map((id) => ({ id })));
    await suite.counter.dataSource.getRepository(Clip).insert(clipIds.map((id) => ({ id })));
    for (const [i, id] of storyIds.entries()) if (i % 3 === 0) await app.counters.increment(Story, id, 'view_count', i);
    for (const [i, id] of clipIds.entries()) if (i % 4 === 0) await app.counters.increment(Clip, id, 'play_count', i);
    const keys = new CounterKeys(keyPrefix, SHARDS);
    /** A key's hash tag: `<prefix>:{<table>:<shard>}`. */
    const tagOf = (key: string) => key.slice(0, key.indexOf('}') + 1);
    const shardsOf = (table: string, ids: Array<string | number>) => [
      ...new Set(ids.map((id) => tagOf(keys.shard(table, keys.shardOf(encodeURIComponent(String(id)))).generation))),
    ];
    const storyTable = suite.counter.dataSource.getMetadata(Story).tablePath;
    const clipTable = suite.counter.dataSource.getMetadata(Clip).tablePath;
    const touched = [...shardsOf(storyTable, storyIds), ...shardsOf(clipTable, clipIds)].sort();
    expect(touched).toHaveLength(2 * SHARDS);

    const roundTrips = new RoundTrips(client, keyPrefix);
    const query = `stories=${storyIds.join(',')}&clips=${clipIds.join(',')}`;
    const { body } = await get(`/rolling/mixed?${query}`, app);
    roundTrips.stop();

    expect((body.stories as StoryBody[]).map(windows)).toEqual(
      storyIds.map((id, i) => ({ id, viewsToday: i % 3 === 0 ? i : 0, viewsThisWeek: i % 3 === 0 ? i : 0 })),
    );
    const byId = new Map((body.clips as ClipBody[]).map(({ id, playsLately }) => [id, playsLately]));
    expect(clipIds.map((id) => byId.get(id))).toEqual(clipIds.map((_, i) => (i % 4 === 0 ? i : 0)));
    // Each shard touched read twice (its changes, then its version), each call naming its own shard's keys.
    const sha = [...scriptsBySha()].find(([, name]) => name === 'nestjsCounterRollingCountRead')![0];
    const reads = roundTrips.trips.flatMap((trip) =>
      trip.args.filter((args) => args[0] === sha).map((args) => ({ trip, keys: args.slice(2, 2 + Number(args[1])) })),
    );
    expect(reads.map(({ keys: called }) => tagOf(called[0])).sort()).toEqual(
      touched.flatMap((tag) => [tag, tag]).sort(),
    );
    for (const { keys: called } of reads) expect(new Set(called.map(tagOf)).size).toBe(1);
    // In two round trips per Redis node: the reads of every shard of the node together, then the versions.
    const owner = await slotOwners(suite.redis);
    const nodes = [...new Set(touched.map((tag) => owner(calculateSlot(tag))))].sort();
    const tripsWithReads = [...new Set(reads.map(({ trip }) => trip))];
    expect(tripsWithReads.map((trip) => nodeOfTrip(trip, owner)).sort()).toEqual(
      nodes.flatMap((node) => [node, node]).sort(),
    );
  });
});
