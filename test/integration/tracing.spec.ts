import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { Article, Remark } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, testRedis, uniquePrefix } from '../../support/redis.js';
import { insertArticles, insertRemarks } from '../../support/rows.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// The spans of `tracing: true` (docs/OPERATING.md, "Tracing"), recorded by the OpenTelemetry SDK as an app registers it.
describe('OpenTelemetry spans', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const redis = testRedis();
  const prefix = uniquePrefix('tracing');
  const quietPrefix = uniquePrefix('untraced');
  let database: TestDatabase;
  let app: CounterApp;
  let untraced: CounterApp;

  beforeAll(async () => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    database = await createTestDatabase('sqlite');
    // One shard per entity: a flush's batches are one per entity, in one transaction (SQLite's batch size).
    app = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      counter: { tracing: true, shards: 1 },
    });
    untraced = await startCounterApp({ database: database.options, keyPrefix: quietPrefix, synchronize: false });
  });

  afterEach(() => {
    vi.restoreAllMocks();
    exporter.reset();
  });

  afterAll(async () => {
    await app?.close();
    await untraced?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    await deleteKeys(redis, quietPrefix);
    redis.disconnect();
    await provider.shutdown();
    trace.disable();
    context.disable();
  });

  const finished = (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name);
  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

  it('traces a load of rows from the database, as a child of the caller’s span', async () => {
    const ids = await insertArticles(app.dataSource, [1, 2, 3]);
    const tracer = trace.getTracer('test');
    await tracer.startActiveSpan('request', async (request) => {
      await app.counters.getMany(Article, ids);
      request.end();
    });
    const [request] = finished('request');
    const loads = finished('counter.load');
    expect(loads.map((span) => [span.kind, span.attributes, parentOf(span), span.status.code])).toEqual([
      [
        SpanKind.INTERNAL,
        { 'counter.entity': 'Article', 'counter.rows': 3 },
        request.spanContext().spanId,
        SpanStatusCode.UNSET,
      ],
    ]);
    expect(loads[0].instrumentationScope.name).toBe('nestjs-counter');
    // Rows in Redis are read without the database: no span.
    exporter.reset();
    await app.counters.getMany(Article, ids);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('traces a flush and, as its children, each batch transaction with its batches', async () => {
    const articles = await insertArticles(app.dataSource, [0, 0]);
    const [remark] = await insertRemarks(app.dataSource, [0], uniquePrefix('remark'));
    for (const id of articles) await app.counters.increment(Article, id, 'like_count');
    await app.counters.increment(Remark, remark, 'reply_count');
    exporter.reset();

    expect(await app.counters.flush()).toMatchObject({ rows: 3, batches: 2 });
    expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual([
      'counter.flush.transaction',
      'counter.flush',
    ]);
    const [flush] = finished('counter.flush');
    const [transaction] = finished('counter.flush.transaction');
    expect([flush.kind, parentOf(flush), flush.status.code]).toEqual([
      SpanKind.INTERNAL,
      undefined,
      SpanStatusCode.UNSET,
    ]);
    expect(flush.attributes).toEqual({
      'counter.rows': 3,
      'counter.batches': 2,
      'counter.recovered_batches': 0,
      'counter.dropped_rows': 0,
      'counter.busy_shards': 0,
      'counter.failed_shards': 0,
    });
    expect([transaction.kind, parentOf(transaction)]).toEqual([SpanKind.INTERNAL, flush.spanContext().spanId]);
    const { 'counter.batch_id': batchIds, ...attributes } = transaction.attributes;
    expect(attributes).toEqual({ 'counter.entity': ['Article', 'Remark'], 'counter.shard': [0, 0], 'counter.rows': 3 });
    expect(batchIds).toEqual([expect.stringMatching(UUID), expect.stringMatching(UUID)]);
  });

  it('marks a failed batch transaction and its flush as errors', async () => {
    const [id] = await insertArticles(app.dataSource, [0]);
    await app.counters.increment(Article, id, 'view_count');
    vi.spyOn(app.app.get(CounterDatabase), 'applyBatches').mockRejectedValueOnce(new Error('database gone'));
    exporter.reset();

    expect((await app.counters.flush()).error?.message).toBe('database gone');
    const [flush] = finished('counter.flush');
    const [transaction] = finished('counter.flush.transaction');
    expect(transaction.status).toEqual({ code: SpanStatusCode.ERROR, message: 'database gone' });
    expect(transaction.events.map((event) => [event.name, event.attributes?.['exception.message']])).toEqual([
      ['exception', 'database gone'],
    ]);
    expect(parentOf(transaction)).toBe(flush.spanContext().spanId);
    expect(flush.status).toEqual({ code: SpanStatusCode.ERROR, message: 'database gone' });
    expect(flush.attributes['counter.failed_shards']).toBe(1);
    // The batch stays claimed in Redis; the next flush recovers and writes it.
    expect(await app.counters.flush()).toMatchObject({ rows: 1, recoveredBatches: 1 });
  });

  it('records nothing when tracing is off, though an SDK is registered', async () => {
    const [id] = await insertArticles(untraced.dataSource, [0]);
    await untraced.counters.increment(Article, id, 'like_count');
    expect((await untraced.counters.flush()).rows).toBe(1);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
