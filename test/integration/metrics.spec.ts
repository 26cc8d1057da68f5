import { Logger } from '@nestjs/common';
import { register, Registry, type MetricValue } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  InvalidCounterDeltaError,
  InvalidIdempotencyKeyError,
  UnknownCountedEntityError,
  UnknownCounterError,
  type EntityClass,
} from '../../lib/index.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { Article, Remark } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../../support/redis.js';
import { insertArticles } from '../../support/rows.js';

const PREFIX = 'nestjs_counter_';

/** A metric's samples as `labels → value`, labels written `a=x,b=y` in the metric's label order. */
async function samples(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`${name} is not registered`);
  // Histograms name each sample (`_bucket`, `_sum`, `_count`); other metrics do not.
  const { values } = (await metric.get()) as { values: Array<MetricValue<string> & { metricName?: string }> };
  return Object.fromEntries(
    values.map(({ labels, value, metricName }) => [
      [metricName ?? name, ...Object.entries(labels).map(([label, text]) => `${label}=${text}`)].join(','),
      value,
    ]),
  );
}

// The Prometheus metrics of `metrics: true | { registry, prefix }` (docs/OPERATING.md, "Metrics"), on real Redis and SQL.
describe('Prometheus metrics', () => {
  const redis = testRedis();
  const prefixes: string[] = [];
  const apps: CounterApp[] = [];
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
  });

  afterEach(() => vi.restoreAllMocks());

  afterAll(async () => {
    for (const app of apps) await app.close();
    await database?.drop();
    for (const prefix of prefixes) await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  async function start(metrics: NonNullable<Parameters<typeof startCounterApp>[0]['counter']>['metrics'], more = {}) {
    const keyPrefix = uniquePrefix('metrics');
    prefixes.push(keyPrefix);
    const app = await startCounterApp({
      database: database.options,
      keyPrefix,
      synchronize: apps.length === 0,
      counter: { metrics, flushOnShutdown: false, ...more },
    });
    apps.push(app);
    return { app, keyPrefix };
  }

  it('counts applied changes, and refusals with their reason, by entity and counter', async () => {
    const registry = new Registry();
    const { app } = await start({ registry });
    const [id] = await insertArticles(app.dataSource, [0]);
    await app.counters.increment(Article, id, 'like_count', 3);
    await app.counters.decrement(Article, id, 'like_count');
    await app.counters.increment(Article, id, 'view_count');
    await expect(app.counters.decrement(Article, id, 'like_count', 5)).rejects.toThrow(/allowed range/);
    await expect(app.counters.increment(Article, id, 'nope')).rejects.toThrow(UnknownCounterError);
    await expect(app.counters.increment(Article, id, 'like_count', 0.5)).rejects.toThrow(InvalidCounterDeltaError);
    await expect(app.counters.increment(Article, 'x', 'like_count')).rejects.toThrow(/ids must be/);
    await expect(app.counters.increment(Article, 999_999, 'like_count')).rejects.toThrow(/does not exist/);
    await expect(app.counters.increment(Remark, 'r', 'reply_count', -1)).rejects.toThrow(/does not exist/);

    expect(await samples(registry, `${PREFIX}changes_total`)).toEqual({
      [`${PREFIX}changes_total,entity=Article,counter=like_count`]: 2,
      [`${PREFIX}changes_total,entity=Article,counter=view_count`]: 1,
    });
    expect(await samples(registry, `${PREFIX}refused_changes_total`)).toEqual({
      [`${PREFIX}refused_changes_total,entity=Article,counter=like_count,reason=out_of_range`]: 1,
      [`${PREFIX}refused_changes_total,entity=Article,counter=unknown,reason=unknown_counter`]: 1,
      [`${PREFIX}refused_changes_total,entity=Article,counter=like_count,reason=invalid_delta`]: 1,
      [`${PREFIX}refused_changes_total,entity=Article,counter=like_count,reason=invalid_id`]: 1,
      [`${PREFIX}refused_changes_total,entity=Article,counter=like_count,reason=row_not_found`]: 1,
      [`${PREFIX}refused_changes_total,entity=Remark,counter=reply_count,reason=row_not_found`]: 1,
    });
  });

  it('labels refusals with names from the registry only: 1,000 bad names add no series', async () => {
    const registry = new Registry();
    const { app } = await start({ registry });
    const [id] = await insertArticles(app.dataSource, [0]);
    const BAD_NAMES = 1_000;
    for (let i = 0; i < BAD_NAMES; i++) {
      await expect(app.counters.increment(Article, id, `counter_${i}`)).rejects.toThrow(UnknownCounterError);
      // A class of its own name each time, as an app routing entity names from requests could pass.
      const entity = Object.defineProperty(class {}, 'name', { value: `Entity${i}` }) as EntityClass;
      await expect(app.counters.decrement(entity, id, 'like_count')).rejects.toThrow(UnknownCountedEntityError);
    }
    for (const idempotencyKey of ['', '\uD800']) {
      await expect(app.counters.increment(Article, id, 'like_count', 1, { idempotencyKey })).rejects.toThrow(
        InvalidIdempotencyKeyError,
      );
    }
    expect(await samples(registry, `${PREFIX}refused_changes_total`)).toEqual({
      [`${PREFIX}refused_changes_total,entity=Article,counter=unknown,reason=unknown_counter`]: BAD_NAMES,
      [`${PREFIX}refused_changes_total,entity=unknown,counter=unknown,reason=unknown_entity`]: BAD_NAMES,
      [`${PREFIX}refused_changes_total,entity=Article,counter=like_count,reason=invalid_idempotency_key`]: 2,
    });
  });

  it('counts flushed rows and batches, flushes by duration, failed flushes and Redis data losses', async () => {
    const registry = new Registry();
    const { app, keyPrefix } = await start({ registry, prefix: 'app_' }, { shards: 1 });
    const ids = await insertArticles(app.dataSource, [0, 0, 0]);
    for (const id of ids) await app.counters.increment(Article, id, 'like_count');

    vi.spyOn(app.app.get(CounterDatabase), 'applyBatches').mockRejectedValueOnce(new Error('database gone'));
    expect((await app.counters.flush()).error?.message).toBe('database gone');
    expect(await samples(registry, 'app_failed_flushes_total')).toEqual({ app_failed_flushes_total: 1 });
    expect(await samples(registry, 'app_flushed_rows_total')).toEqual({});

    // One shard per entity: the three rows are one batch.
    expect((await app.counters.flush()).rows).toBe(3);
    expect(await samples(registry, 'app_flushed_rows_total')).toEqual({ 'app_flushed_rows_total,entity=Article': 3 });
    expect(await samples(registry, 'app_flushed_batches_total')).toEqual({
      'app_flushed_batches_total,entity=Article': 1,
    });
    const durations = await samples(registry, 'app_flush_duration_seconds');
    expect(durations.app_flush_duration_seconds_count).toBe(2);
    expect(durations['app_flush_duration_seconds_bucket,le=+Inf']).toBe(2);
    expect(await samples(registry, 'app_failed_flushes_total')).toEqual({ app_failed_flushes_total: 1 });
    expect(await samples(registry, 'app_redis_data_losses_total')).toEqual({ app_redis_data_losses_total: 0 });

    // Every key of the app gone, as after a restart of Redis without persistence.
    vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    await deleteKeys(redis, keyPrefix);
    expect((await app.counters.flush()).error).toBeUndefined();
    expect(await samples(registry, 'app_redis_data_losses_total')).toEqual({ app_redis_data_losses_total: 1 });
  });

  it('reads the backlog at scrape time: rows waiting and the age of the oldest change', async () => {
    const registry = new Registry();
    const { app } = await start({ registry });
    expect(await samples(registry, `${PREFIX}pending_rows`)).toEqual({ [`${PREFIX}pending_rows`]: 0 });
    expect(await samples(registry, `${PREFIX}oldest_pending_age_seconds`)).toEqual({
      [`${PREFIX}oldest_pending_age_seconds`]: 0,
    });
    const ids = await insertArticles(app.dataSource, [0, 0]);
    for (const id of ids) await app.counters.increment(Article, id, 'like_count');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const text = await registry.metrics();
    expect(text).toContain(`\n${PREFIX}pending_rows 2\n`);
    const age = Number(/\nnestjs_counter_oldest_pending_age_seconds (\S+)\n/.exec(text)?.[1]);
    // Waited 300 ms; a scrape within 10 s of it.
    expect(age).toBeGreaterThanOrEqual(0.3);
    expect(age).toBeLessThan(10);
  });

  it('reuses the metrics of a registry another app registered, and counts both apps in them', async () => {
    const registry = new Registry();
    const first = await start({ registry });
    const second = await start({ registry });
    const [id] = await insertArticles(first.app.dataSource, [0]);
    await first.app.counters.increment(Article, id, 'view_count');
    await second.app.counters.increment(Article, id, 'view_count');
    expect(await samples(registry, `${PREFIX}changes_total`)).toEqual({
      [`${PREFIX}changes_total,entity=Article,counter=view_count`]: 2,
    });
    // Two key prefixes: two deployments, whose backlogs add up.
    expect(await samples(registry, `${PREFIX}pending_rows`)).toEqual({ [`${PREFIX}pending_rows`]: 2 });
    expect(registry.getMetricsAsArray()).toHaveLength(11);
  });

  it('registers in prom-client’s global registry with metrics: true', async () => {
    const { app } = await start(true);
    const [id] = await insertArticles(app.dataSource, [0]);
    await app.counters.increment(Article, id, 'view_count', 5);
    expect(await samples(register, `${PREFIX}changes_total`)).toEqual({
      [`${PREFIX}changes_total,entity=Article,counter=view_count`]: 1,
    });
  });

  it('counts the batches read with HGETALL when the Redis user may not DUMP', async () => {
    const registry = new Registry();
    const keyPrefix = uniquePrefix('metrics-acl');
    const user = `${keyPrefix}-user`;
    await redis.acl('SETUSER', user, 'on', '>secret', '+@all', '-dump', `~${keyPrefix}*`);
    vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { hostname, port } = new URL(REDIS_URL);
    prefixes.push(keyPrefix);
    const { app } = await start(
      { registry },
      {
        keyPrefix,
        shards: 1,
        redis: { host: hostname, port: Number(port || 6379), username: user, password: 'secret' },
      },
    );
    try {
      const ids = await insertArticles(app.dataSource, [0, 0]);
      for (const id of ids) await app.counters.increment(Article, id, 'like_count');
      // One shard: one batch, claimed once.
      expect(await app.counters.flush()).toMatchObject({ rows: 2, batches: 1 });
      expect(await samples(registry, `${PREFIX}dump_fallbacks_total`)).toEqual({
        [`${PREFIX}dump_fallbacks_total,reason=refused`]: 1,
      });
    } finally {
      await app.close();
      apps.splice(apps.indexOf(app), 1);
      await redis.acl('DELUSER', user);
    }
  });
});
