import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { lastValueFrom, of } from 'rxjs';
import { In, type Repository } from 'typeorm';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { CounterRedisHandle } from '../../lib/redis/counter-redis.handle.js';
import { tapCommands } from '../../support/command-tap.js';
import { slotOwners } from '../../support/slot-owners.js';
import type { BenchContext, BenchScenario } from '../harness/bench-context.js';
import { giveCountersValues, insertRows, startBenchApp, type BenchApp } from '../harness/bench-app.js';
import { BenchPost, COUNTER_NAMES } from '../../test/fixtures/entities.js';
import { formatRatio, ratio, type BenchRow, type Figures, type TargetCheck } from '../harness/bench-results.js';
import { withDatabase } from '../harness/databases.js';
import { commandCount, usecPerCall } from '../harness/redis-command-cost.js';
import { LatencyRecorder } from '../harness/latency-recorder.js';
import { benchPrefix, deleteKeys, inspectionClient, type Topology } from '../harness/redis-targets.js';

/** One page of a listing: what a busy endpoint returns. */
const PAGE_SIZE = 100;
/** Calls whose Redis traffic is counted (untimed): every one must cost the same round trips. */
const COUNTED_CALLS = 20;
/** Pages of rows never read before, for the cold row: the first of them counted, the rest timed. */
const COUNTED_COLD_PAGES = 2;
/** Timed calls per side on the warm page: enough for a stable p99. */
const iterationsOf = (context: BenchContext) => (context.quick ? 200 : 2_000);
/** Timed cold pages: each one needs rows of its own. */
const coldPagesOf = (context: BenchContext) => (context.quick ? 10 : 50);

type Page = BenchPost[];
/** The benchmark's own Redis client, to read what the module wrote. */
type Inspector = ReturnType<typeof inspectionClient>;

interface Traffic {
  /** Round trips of each call: pipelines executed plus commands sent alone. */
  roundTrips: number[];
  /** Commands (script calls) of each call. */
  commands: number[];
}

interface TopologyResult {
  rows: BenchRow[];
  checks: TargetCheck[];
}

/** Everything one topology's measurements share. */
interface PageBench {
  bench: BenchApp;
  inspector: Inspector;
  intercept: (page: Page) => Promise<Page>;
  /** The baseline: one more SELECT of the page's rows. */
  select: (pageIds: number[]) => Promise<Page>;
}

/** One line of the table: latencies of both sides, the page's Redis traffic and layout. */
interface Measured {
  library: Figures;
  baseline: Figures;
  traffic: Traffic;
  layout: { shards: number; slotGroups: number };
  /** Redis's own time per script call (INFO commandstats), on a single Redis; NaN on a cluster. */
  redisUsPerCall: number;
}

const ids = (first: number, count: number) => Array.from({ length: count }, (_, i) => first + i);

/** Ids between two rows of a spread page: each row in a run of 100 ids of its own (a shard takes runs of 100). */
const STRIDE = 101;
/**
 * Page `page` of rows spread over the table, as a listing sorted by anything but the id returns them:
 * ids 1 + page + 101 × k. Pages 0 to 100 share no row.
 */
const spreadPage = (page: number) => Array.from({ length: PAGE_SIZE }, (_, k) => 1 + page + STRIDE * k);
/** Rows the spread pages take; the feed page's follow them. */
const SPREAD_ROWS = PAGE_SIZE * STRIDE;
/** A feed: the latest rows, one after another (two runs of 100 ids). */
const feedPage = () => ids(SPREAD_ROWS + 1, PAGE_SIZE);

/** Runs `intercept` as Nest runs an interceptor around a handler that returns `page`. */
function interceptorCall(bench: BenchApp) {
  return (page: Page) =>
    lastValueFrom(
      bench.interceptor.intercept(new ExecutionContextHost([]), { handle: () => of(page) }),
    ) as Promise<Page>;
}

/** A fresh page per call (the interceptor writes into the entities), from rows read once. */
const pageFrom = (stored: Page): Page => stored.map((row) => Object.assign(new BenchPost(), row));

/** What Redis holds for each row (its `v:` field per counter), read with the benchmark's own client. */
async function liveValues(bench: BenchApp, inspector: Inspector, pageIds: number[]) {
  const keys = bench.app.get(CounterKeys, { strict: false });
  const entity = bench.app.get(CounterRegistry, { strict: false }).get(BenchPost);
  const fields = COUNTER_NAMES.map((name) => `v:${name}`);
  return Promise.all(
    pageIds.map(async (id) => {
      const encoded = keys.encodeId(String(id));
      const values = await inspector.hmget(keys.shard(entity.key, keys.shardOf(encoded)).row(encoded), ...fields);
      return values.map(Number);
    }),
  );
}

/** Throws unless every entity of `page` carries the live values Redis holds. */
async function assertOverlaid(bench: BenchApp, inspector: Inspector, page: Page): Promise<void> {
  const live = await liveValues(
    bench,
    inspector,
    page.map((post) => post.id),
  );
  page.forEach((post, i) => {
    const overlaid = [post.likeCount, post.viewCount, post.commentCount];
    if (overlaid.some((value, c) => value !== live[i][c])) {
      throw new Error(`post ${post.id}: overlaid ${overlaid.join('/')} but Redis holds ${live[i].join('/')}`);
    }
  });
}

/** The shards a page's rows live in, and the nodes (masters) that serve them, per the server. */
async function slotGroupsOf(bench: BenchApp, inspector: Inspector, pageIds: number[]) {
  const keys = bench.app.get(CounterKeys, { strict: false });
  const entity = bench.app.get(CounterRegistry, { strict: false }).get(BenchPost);
  const shards = new Set(pageIds.map((id) => keys.shardOf(keys.encodeId(String(id)))));
  const owner = await slotOwners(inspector);
  const nodes = new Set([...shards].map((shard) => owner(keys.shard(entity.key, shard).slot)));
  return { shards: shards.size, slotGroups: nodes.size };
}

/** Counts what the module's own client sends during each of `calls`, one after another. */
async function countTraffic(bench: BenchApp, calls: Array<() => Promise<unknown>>): Promise<Traffic> {
  const client = bench.app.get(CounterRedisHandle, { strict: false }).client;
  const traffic: Traffic = { roundTrips: [], commands: [] };
  let pipelines = new Set<object>();
  let single = 0;
  let commands = 0;
  const stop = tapCommands(client, (command) => {
    commands++;
    if (command.pipeline) pipelines.add(command.pipeline);
    else single++;
  });
  try {
    for (const call of calls) {
      pipelines = new Set();
      single = 0;
      commands = 0;
      await call();
      traffic.roundTrips.push(pipelines.size + single);
      traffic.commands.push(commands);
    }
  } finally {
    stop();
  }
  return traffic;
}

/**
 * Times the interceptor and the extra SELECT in turns (one of each per iteration), so that load from
 * elsewhere on the machine falls on both sides alike. Pages are built outside the timed part.
 */
async function timeInTurns(
  iterations: number,
  library: (iteration: number) => { run: () => Promise<unknown> },
  baseline: (iteration: number) => Promise<unknown>,
): Promise<{ library: Figures; baseline: Figures }> {
  const libraryTimes = new LatencyRecorder();
  const baselineTimes = new LatencyRecorder();
  for (let i = 0; i < iterations; i++) {
    const { run } = library(i);
    let started = performance.now();
    await run();
    libraryTimes.record(performance.now() - started);
    started = performance.now();
    await baseline(i);
    baselineTimes.record(performance.now() - started);
  }
  const figures = (recorder: LatencyRecorder): Figures => ({
    p50Ms: recorder.percentile(50),
    p99Ms: recorder.percentile(99),
  });
  return { library: figures(libraryTimes), baseline: figures(baselineTimes) };
}

const sortedById = (page: Page) => page.sort((a, b) => a.id - b.id);

/**
 * A warm page: its rows all in Redis, half of them with changes not yet flushed, so that live values
 * differ from the database's and a missing overlay would show.
 */
async function measureWarm(context: BenchContext, page: PageBench, pageIds: number[]): Promise<Measured> {
  const { bench, intercept, select } = page;
  await bench.counters.getMany(BenchPost, pageIds);
  for (const id of pageIds.filter((id) => id % 2 === 0))
    await bench.counters.increment(BenchPost, id, 'like_count', (id % 7) + 1);
  const stored = sortedById(await select(pageIds));
  const overlaid = await intercept(pageFrom(stored));
  await assertOverlaid(bench, page.inspector, overlaid);
  if (overlaid.every((post, i) => post.likeCount === stored[i].likeCount))
    throw new Error('no overlaid value differs from the database');

  // Warm-up: JIT, script loading on each connection, PostgreSQL's plan cache.
  await timeInTurns(
    context.quick ? 50 : 300,
    () => ({ run: () => intercept(pageFrom(stored)) }),
    () => select(pageIds),
  );
  const traffic = await countTraffic(
    bench,
    Array.from({ length: COUNTED_CALLS }, () => () => intercept(pageFrom(stored))),
  );
  // On a cluster INFO answers for one node only: Redis time per call is read on a single Redis.
  const standalone = !('nodes' in page.inspector);
  const scriptsBefore = standalone ? await commandCount(page.inspector, 'evalsha') : undefined;
  const timed = await timeInTurns(
    iterationsOf(context),
    () => {
      const fresh = pageFrom(stored);
      return { run: () => intercept(fresh) };
    },
    () => select(pageIds),
  );
  const redisUsPerCall = scriptsBefore
    ? usecPerCall(scriptsBefore, await commandCount(page.inspector, 'evalsha'))
    : Number.NaN;
  return { ...timed, traffic, layout: await slotGroupsOf(bench, page.inspector, pageIds), redisUsPerCall };
}

/**
 * Cold pages: rows Redis has never seen (a new page per call), so each call reads Redis, reads the
 * database and seeds Redis. The first pages are counted (and checked), the others timed.
 */
async function measureCold(context: BenchContext, page: PageBench): Promise<Measured> {
  const { bench, intercept, select } = page;
  const pages = COUNTED_COLD_PAGES + coldPagesOf(context);
  // Spread pages after the warm one (page 0).
  const idsOf = (index: number) => spreadPage(1 + index);
  const stored = await Promise.all(
    Array.from({ length: pages }, async (_, index) => sortedById(await select(idsOf(index)))),
  );
  const traffic = await countTraffic(
    bench,
    stored
      .slice(0, COUNTED_COLD_PAGES)
      .map((rows) => async () => assertOverlaid(bench, page.inspector, await intercept(pageFrom(rows)))),
  );
  const timed = await timeInTurns(
    coldPagesOf(context),
    (index) => {
      const fresh = pageFrom(stored[COUNTED_COLD_PAGES + index]);
      return { run: () => intercept(fresh) };
    },
    (index) => select(idsOf(COUNTED_COLD_PAGES + index)),
  );
  return { ...timed, traffic, layout: await slotGroupsOf(bench, page.inspector, idsOf(0)), redisUsPerCall: Number.NaN };
}

function tableRow(label: string, measured: Measured): BenchRow {
  return {
    label,
    library: measured.library,
    baseline: measured.baseline,
    extra: {
      'round trips/call': Math.max(...measured.traffic.roundTrips),
      'slot groups': measured.layout.slotGroups,
      'shards touched': measured.layout.shards,
      'commands/call': Math.max(...measured.traffic.commands),
      ...(Number.isNaN(measured.redisUsPerCall) ? {} : { 'Redis µs/script call': measured.redisUsPerCall }),
    },
  };
}

function targetChecks(topology: Topology, warm: Measured): TargetCheck[] {
  const trips = warm.traffic.roundTrips;
  const groups = warm.layout.slotGroups;
  const tripsText = trips.every((count) => count === trips[0])
    ? `${trips[0]}`
    : `${Math.min(...trips)}–${Math.max(...trips)}`;
  const [library, baseline] = [warm.library.p50Ms ?? Number.NaN, warm.baseline.p50Ms ?? Number.NaN];
  return [
    {
      target: `${topology}: one Redis round trip per slot group (warm page)`,
      actual: `${tripsText} round trip(s) per call, ${groups} slot group(s)`,
      met: trips.every((count) => count === groups),
    },
    {
      target: `${topology}: interceptor p50 below one extra SELECT of the page`,
      actual: `${library.toFixed(3)} ms vs ${baseline.toFixed(3)} ms (${formatRatio(ratio(library, baseline))})`,
      met: library < baseline,
    },
  ];
}

async function measureTopology(context: BenchContext, topology: Topology): Promise<TopologyResult> {
  const prefix = benchPrefix('live');
  return withDatabase('postgres', async (database) => {
    const bench = await startBenchApp({
      database: database.options,
      topology,
      keyPrefix: prefix,
      counter: { flushEnabled: false },
    });
    const inspector = inspectionClient(topology);
    try {
      await insertRows(bench.dataSource, BenchPost, SPREAD_ROWS + PAGE_SIZE);
      await giveCountersValues(bench.dataSource);
      const repository: Repository<BenchPost> = bench.dataSource.getRepository(BenchPost);
      const page: PageBench = {
        bench,
        inspector,
        intercept: interceptorCall(bench),
        select: (pageIds) => repository.findBy({ id: In(pageIds) }),
      };
      const warm = await measureWarm(context, page, spreadPage(0));
      const feed = await measureWarm(context, page, feedPage());
      const cold = await measureCold(context, page);
      context.log(
        `${topology} warm: interceptor p50 ${warm.library.p50Ms?.toFixed(3)} ms, SELECT p50 ${warm.baseline.p50Ms?.toFixed(3)} ms, ` +
          `round trips ${warm.traffic.roundTrips.join(',')}, slot groups ${warm.layout.slotGroups}, shards ${warm.layout.shards}`,
      );
      return {
        rows: [
          tableRow(`${topology}, warm page`, warm),
          tableRow(`${topology}, warm page of consecutive ids (a feed; no target)`, feed),
          tableRow(`${topology}, cold page (seeded from the database)`, cold),
        ],
        checks: targetChecks(topology, warm),
      };
    } finally {
      // The app first: its final flush on shutdown still uses the keys (and would recreate some).
      await bench.close();
      await deleteKeys(inspector, prefix);
      inspector.disconnect();
    }
  });
}

export const liveReads: BenchScenario = {
  id: 4,
  slug: 'live-reads',
  title: 'Live reads',
  async run(context) {
    const results = [await measureTopology(context, 'standalone'), await measureTopology(context, 'cluster')];
    const iterations = iterationsOf(context);
    return {
      library:
        '`CounterInterceptor.intercept` called as Nest calls it, around a handler returning a fresh page of 100 `BenchPost` ' +
        'entities (3 counters each) already in Redis, half with unflushed changes: the time it adds (live values written in).',
      baseline:
        'one extra `SELECT` of the same 100 rows through TypeORM (`repository.findBy({ id: In(ids) })`, PostgreSQL, same ' +
        'process): what a handler would pay to read the counters again from the database.',
      unit: 'pages',
      rows: results.flatMap((result) => result.rows),
      checks: results.flatMap((result) => result.checks),
      notes: [
        `Latencies of ${iterations.toLocaleString('en-US')} sequential calls per side after a warm-up, the two sides in turns ` +
          '(one of each per iteration) so that other load on the machine falls on both alike.',
        `Round trips: counted on the module's own ioredis client over ${COUNTED_CALLS} untimed calls (every command it sends; ` +
          "an executed pipeline counts once). Slot groups: the distinct masters serving the shards of the page's rows, per " +
          '`CLUSTER SLOTS`. Commands/call: script calls, one per slot touched on a cluster and one per page on a single Redis, ' +
          'for the read and again for the seed on a cold page.',
        'Every overlaid value was checked against what Redis holds (the `v:` field per counter), read with a separate client.',
        `Pages hold unrelated rows, as a listing sorted by anything but the id returns them: ids ${STRIDE} apart (1, ` +
          `${1 + STRIDE}, ${1 + 2 * STRIDE} …), each in a run of 100 ids of its own, so each row's shard is a matter of hashing ` +
          'and the page touches as many shards and slots as it would by chance. The targets are judged on it. The feed page ' +
          '(no target) holds 100 consecutive ids: a shard takes runs of 100 integer ids, so they touch two shards.',
        'Cold page (no target in the issue): rows Redis has never seen, a new page per call, so each call reads Redis, reads ' +
          'the database once and seeds Redis.',
        'Default module options (64 shards per entity) except the scheduled flush, which is off: it is not part of a read.',
      ],
    };
  },
};
