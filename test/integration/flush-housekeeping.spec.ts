import { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CounterLedgerEntry, CounterRowNotFoundError } from '../../lib/index.js';
import { CounterFlusher } from '../../lib/flush/counter.flusher.js';
import { CounterFlushScheduler } from '../../lib/flush/counter-flush.scheduler.js';
import { CounterKeys } from '../../lib/redis/counter.keys.js';
import { startCounterApp } from '../support/counter-app.js';
import { useCounterSuite } from '../support/counter-suite.js';
import { DATABASES } from '../../support/databases.js';
import { Article, Remark } from '../fixtures/entities.js';
import { keysEndingWith } from '../../support/redis.js';
import { articleCounts, insertArticles, insertRemarks, remarkCounts } from '../../support/rows.js';

const RETENTION_MS = 60_000;

/** Resolves once every flush started so far has ended, and no flush is left that one of them started. */
async function flushesEnded(started: Array<Promise<unknown>>): Promise<void> {
  for (let seen = -1; seen !== started.length;) {
    seen = started.length;
    await Promise.allSettled(started);
    // The scheduler starts a catch-up flush as a flush ends, before the next turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

// The flush's housekeeping: rows deleted under pending deltas, ledger pruning, retries with backoff.
describe.each(DATABASES)('flush housekeeping on %s', (databaseName) => {
  const suite = useCounterSuite(databaseName, 'house', {
    ledgerRetentionMs: RETENTION_MS,
    flushIntervalMs: 20,
    flushMaxBackoffMs: 320,
  });

  afterEach(() => vi.restoreAllMocks());

  it('drops the pending deltas of a row deleted from the database, and only those', async () => {
    const { counter, redis, prefix } = suite;
    const ids = await insertArticles(counter.dataSource, [1, 2, 3]);
    // Remark ids hold ':', '{' and '}', so their keys carry them encoded.
    const remarks = await insertRemarks(counter.dataSource, [4, 6], prefix);
    for (const id of ids) await counter.counters.increment(Article, id, 'like_count', 10);
    for (const id of remarks) await counter.counters.increment(Remark, id, 'reply_count', 5);
    await counter.dataSource.getRepository(Article).delete(ids[1]);
    await counter.dataSource.getRepository(Remark).delete(remarks[1]);

    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report.droppedRows).toBe(2);
    const stored = await articleCounts(counter.dataSource, ids);
    expect(stored.get(ids[0])?.likes).toBe(11);
    expect(stored.has(ids[1])).toBe(false);
    expect(stored.get(ids[2])?.likes).toBe(13);
    expect((await remarkCounts(counter.dataSource, remarks)).get(remarks[0])).toBe(9);

    // The deleted row's hash is gone; counting it again is refused and writes nothing.
    const keys = new CounterKeys(prefix, 8);
    const table = counter.dataSource.getMetadata(Article).tablePath;
    const rowKey = keys.shard(table, keys.shardOf(String(ids[1]))).row(String(ids[1]));
    expect(await redis.exists(rowKey)).toBe(0);
    await expect(counter.counters.increment(Article, ids[1], 'like_count')).rejects.toBeInstanceOf(
      CounterRowNotFoundError,
    );
    expect(await redis.exists(rowKey)).toBe(0);
    const encodedRemark = encodeURIComponent(remarks[1]);
    const remarkTable = counter.dataSource.getMetadata(Remark).tablePath;
    expect(await redis.exists(keys.shard(remarkTable, keys.shardOf(encodedRemark)).row(encodedRemark))).toBe(0);
  });

  it('prunes ledger rows older than the retention on its first flush, and keeps the recent ones', async () => {
    const { counter, database, prefix } = suite;
    const ledger = counter.dataSource.getRepository(CounterLedgerEntry);
    const now = Date.now();
    await ledger.insert([
      { batchId: 'old-batch', entity: 'x', shard: 0, rowCount: 1, appliedAt: String(now - 2 * RETENTION_MS) },
      { batchId: 'recent-batch', entity: 'x', shard: 0, rowCount: 1, appliedAt: String(now - RETENTION_MS / 2) },
    ]);
    // An instance prunes on its first flush (later at most every retention / 10): a new one, as after a deploy.
    const started = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      synchronize: false,
      counter: { ledgerRetentionMs: RETENTION_MS },
    });
    try {
      expect((await started.counters.flush()).error).toBeUndefined();
    } finally {
      await started.close();
    }
    expect(await ledger.findOneBy({ batchId: 'old-batch' })).toBeNull();
    expect(await ledger.findOneBy({ batchId: 'recent-batch' })).not.toBeNull();
  });

  it('keeps the scheduled flush alive through failures, backing off, and recovers', async () => {
    const { counter } = suite;
    const [id] = await insertArticles(counter.dataSource, [0]);
    await counter.counters.increment(Article, id, 'like_count', 3);
    const flusher = counter.app.get(CounterFlusher);
    const realFlush = flusher.flush.bind(flusher);
    const calls: number[] = [];
    const started: Array<Promise<unknown>> = [];
    vi.spyOn(flusher, 'flush').mockImplementation(() => {
      calls.push(Date.now());
      const flush =
        calls.length <= 4 ? Promise.reject(new Error(`database unreachable (${calls.length})`)) : realFlush();
      started.push(flush);
      return flush;
    });
    const logged = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const scheduler = counter.app.get(CounterFlushScheduler);
    const timer = setInterval(() => scheduler.tick(), 20);
    try {
      await expect
        .poll(async () => (await articleCounts(counter.dataSource, [id])).get(id)?.likes, {
          timeout: 10_000,
          interval: 50,
        })
        .toBe(3);
    } finally {
      clearInterval(timer);
      await flushesEnded(started);
    }
    expect(logged.mock.calls.map(([message]) => String(message))).toEqual(
      [1, 2, 3, 4].map((attempt) =>
        expect.stringMatching(
          new RegExp(
            `^Counter flush failed \\(attempt ${attempt}\\); the batch stays in Redis and is retried in \\d+ ms\\. ` +
              `database unreachable \\(${attempt}\\)$`,
          ),
        ),
      ),
    );
    // Ticks come every 20 ms; the gaps after failures grow (exponential backoff with jitter ≥ half).
    const gaps = calls.slice(1, 5).map((at, i) => at - calls[i]);
    expect(gaps[3]).toBeGreaterThanOrEqual(150);
    expect(gaps[3]).toBeGreaterThan(gaps[0]);
    // Recovered: the last flush succeeded, so no backoff holds the next one.
    expect((await counter.counters.status()).consecutiveFailedFlushes).toBe(0);
  });

  it('starts the next flush as soon as one that outlasted a tick ends, once, and not after shutdown began', async () => {
    const { counter } = suite;
    const flusher = counter.app.get(CounterFlusher);
    const realFlush = flusher.flush.bind(flusher);
    // Each flush waits for its turn to end, so the test decides when a flush is over; released, they no
    // longer wait (a failed assertion must not leave a flush hanging for the suite's shutdown).
    const ends: Array<() => void> = [];
    const started: Array<Promise<unknown>> = [];
    let released = false;
    vi.spyOn(flusher, 'flush').mockImplementation(() => {
      const flush = (async () => {
        if (!released) await new Promise<void>((resolve) => ends.push(resolve));
        return realFlush();
      })();
      started.push(flush);
      return flush;
    });
    const scheduler = counter.app.get(CounterFlushScheduler);

    try {
      scheduler.tick();
      scheduler.tick();
      scheduler.tick();
      expect(ends).toHaveLength(1);
      ends[0]();
      await flushesEnded(started.slice(0, 1));
      // The ticks that came during the first flush start one more flush, at once.
      expect(ends).toHaveLength(2);
      ends[1]();
      await flushesEnded(started.slice(0, 2));
      expect(ends).toHaveLength(2);

      scheduler.tick();
      scheduler.tick();
      expect(ends).toHaveLength(3);
      const shutdown = scheduler.beforeApplicationShutdown();
      ends[2]();
      await flushesEnded(started.slice(0, 3));
      // No catch-up once shutdown began: the fourth flush is the final one.
      expect(ends).toHaveLength(4);
      ends[3]();
      await shutdown;
      await flushesEnded(started.slice(0, 4));
      expect(ends).toHaveLength(4);
    } finally {
      released = true;
      for (const end of ends) end();
      await flushesEnded(started);
    }
  });

  it('leaves no batch, lease or pending field behind once everything is flushed', async () => {
    const { counter, redis, prefix } = suite;
    const ids = await insertArticles(counter.dataSource, [0, 0]);
    await counter.counters.increment(Article, ids[0], 'like_count', 1);
    await counter.counters.increment(Article, ids[1], 'view_count', 1);
    expect((await counter.counters.flush()).error).toBeUndefined();
    expect(await keysEndingWith(redis, prefix, ':batch')).toEqual([]);
    expect(await keysEndingWith(redis, prefix, ':lease')).toEqual([]);
    const dirty = await keysEndingWith(redis, prefix, ':dirty');
    expect(dirty).toEqual([]);
  });
});
