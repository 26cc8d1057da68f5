import { Logger, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorService, TerminusModule } from '@nestjs/terminus';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CounterConfigurationError, CounterHealthIndicator, type CounterHealthOptions } from '../../lib/index.js';
import { FlushStore } from '../../lib/redis/flush.store.js';
import { CounterDatabase } from '../../lib/sql/counter.database.js';
import { Article } from '../fixtures/entities.js';
import type { CounterApp } from '../support/counter-app.js';
import { useCounterApps } from '../support/counter-apps.js';
import { freePort } from '../../support/free-port.js';
import { insertArticles } from '../../support/rows.js';

/** Whether the installed Terminus (12, not 11) has the degraded status. */
const terminusHasDegraded =
  typeof (new HealthIndicatorService().check('probe') as { degraded?: unknown }).degraded === 'function';

/** What the indicator reports of an app that has done nothing yet, beside its status. */
const IDLE = {
  redisAvailable: true,
  pendingRows: 0,
  inFlightBatches: 0,
  oldestPendingAgeMs: null,
  lastSuccessfulFlushAt: null,
  lastFailedFlushAt: null,
  lastFlushError: null,
  consecutiveFailedFlushes: 0,
  lastRedisDataLoss: null,
};

// CounterHealthIndicator in a real HealthCheckService (docs/OPERATING.md, "Health"), on the installed Terminus.
describe(`the health indicator on Terminus ${terminusHasDegraded ? '12' : '11'}`, () => {
  const apps = useCounterApps('health');

  afterEach(() => vi.restoreAllMocks());

  function start(redisUrl?: string): Promise<CounterApp> {
    return apps.start({
      counter: { flushOnShutdown: false, ...(redisUrl ? { redis: redisUrl } : {}) },
      imports: [TerminusModule.forRoot({ logger: false })],
    });
  }

  /** The health check as a controller runs it: the result, or the 503's body. */
  async function check(app: CounterApp, options?: CounterHealthOptions): Promise<unknown> {
    const indicator = app.app.get(CounterHealthIndicator);
    try {
      return await app.app.get(HealthCheckService).check([() => indicator.isHealthy('counters', options)]);
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      return { unavailable: error.getResponse() };
    }
  }

  it('is up, with the status figures, while changes reach the database', async () => {
    const app = await start();
    const counters = { status: 'up', ...IDLE };
    expect(await check(app)).toEqual({ status: 'ok', info: { counters }, error: {}, details: { counters } });
  });

  it('is down while Redis is unreachable', async () => {
    const app = await start(`redis://127.0.0.1:${await freePort()}`);
    const counters = {
      status: 'down',
      message: 'Redis is unreachable: counter changes fail and reads come from the database.',
      ...IDLE,
      redisAvailable: false,
      pendingRows: null,
      inFlightBatches: null,
    };
    expect(await check(app)).toEqual({
      unavailable: { status: 'error', info: {}, error: { counters }, details: { counters } },
    });
  });

  it('is degraded (up on Terminus 11) when a flush failed, and down after downAfterFailedFlushes', async () => {
    const app = await start();
    const [id] = await insertArticles(app.dataSource, [0]);
    await app.counters.increment(Article, id, 'like_count');
    vi.spyOn(app.app.get(CounterDatabase), 'applyBatches').mockRejectedValue(new Error('database gone'));
    expect((await app.counters.flush()).error?.message).toBe('database gone');

    const once = (await check(app, { downAfterFailedFlushes: 2 })) as { status: string; details: unknown };
    const figures = { consecutiveFailedFlushes: 1, lastFlushError: 'unknown', pendingRows: 1 };
    if (terminusHasDegraded) {
      expect(once.status).toBe('degraded');
      expect(once.details).toEqual({
        counters: expect.objectContaining({
          status: 'degraded',
          message: 'The last 1 counter flush(es) failed; the next one is retried after a backoff.',
          ...figures,
        }),
      });
    } else {
      expect(once.status).toBe('ok');
      expect(once.details).toEqual({ counters: expect.objectContaining({ status: 'up', ...figures }) });
      expect(once.details).not.toHaveProperty('counters.message');
    }

    expect((await app.counters.flush()).error?.message).toBe('database gone');
    expect(await check(app, { downAfterFailedFlushes: 2 })).toEqual({
      unavailable: expect.objectContaining({
        status: 'error',
        error: {
          counters: expect.objectContaining({
            status: 'down',
            message: 'The last 2 counter flush(es) failed: changes pile up in Redis instead of reaching the database.',
            consecutiveFailedFlushes: 2,
          }),
        },
      }),
    });
  });

  it("shows a failed flush's reason and time, never the database's words, which go to the log", async () => {
    const errors = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const app = await apps.start({
      counter: { flushOnShutdown: false, flushEnabled: true, flushIntervalMs: 100 },
      imports: [TerminusModule.forRoot({ logger: false })],
    });
    const [id] = await insertArticles(app.dataSource, [0]);
    const table = app.dataSource.getMetadata(Article).tablePath;
    // SQLite adds no CHECK to a table: a trigger refuses the row's flush, naming itself and the table.
    await app.dataSource.query(
      `CREATE TRIGGER secret_cap BEFORE UPDATE OF like_count ON ${table} WHEN NEW.id = ${id} ` +
        `BEGIN SELECT RAISE(ABORT, 'secret_cap failed for ${table}'); END`,
    );
    try {
      await app.counters.increment(Article, id, 'like_count');
      // The scheduled flush runs every 100 ms: failed within 3 s, backoff included.
      const deadline = Date.now() + 3_000;
      while ((await app.counters.status()).consecutiveFailedFlushes === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const result = await check(app, { downAfterFailedFlushes: 100 });
      const counters = { lastFlushError: 'constraint-violation', lastFailedFlushAt: expect.any(Date) };
      expect(result).toMatchObject({ details: { counters } });
      const shown = JSON.stringify(result);
      expect(shown).not.toContain('secret_cap');
      expect(shown).not.toContain(table);
      // The scheduler logged the database's own error, for the operator.
      const logged = errors.mock.calls.map(([message]) => String(message));
      expect(logged.filter((line) => line.includes('secret_cap failed for'))).not.toEqual([]);
    } finally {
      await app.close();
      await app.dataSource.query('DROP TRIGGER secret_cap').catch(() => undefined);
    }
  });

  it("tells why it could not read the status by the failure's kind, never its words", async () => {
    const app = await start();
    const errors = vi.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    vi.spyOn(app.app.get(FlushStore), 'backlog').mockRejectedValue(new Error('secret internals'));
    expect(await check(app)).toEqual({
      unavailable: expect.objectContaining({
        error: { counters: { status: 'down', message: "Could not read the counters' status (unknown)." } },
      }),
    });
    expect(errors.mock.calls.map(([message]) => message)).toEqual([
      "Could not read the counters' status (unknown). secret internals",
    ]);
  });

  it('is degraded (up on Terminus 11) when the oldest change waiting is older than degradedAfterMs', async () => {
    const app = await start();
    const [id] = await insertArticles(app.dataSource, [0]);
    await app.counters.increment(Article, id, 'view_count');
    // Under the default (60 s) the backlog's age is no concern.
    expect(await check(app)).toMatchObject({ status: 'ok', info: { counters: { status: 'up', pendingRows: 1 } } });
    await new Promise((resolve) => setTimeout(resolve, 300));

    const result = (await check(app, { degradedAfterMs: 200 })) as { status: string; details: { counters: object } };
    if (terminusHasDegraded) {
      expect(result.status).toBe('degraded');
      expect(result.details.counters).toMatchObject({
        status: 'degraded',
        message: expect.stringMatching(
          /^The oldest counter change not yet in the database is \d+ ms old, more than 200 ms\.$/,
        ),
        pendingRows: 1,
      });
    } else {
      expect(result.status).toBe('ok');
      expect(result.details.counters).toMatchObject({ status: 'up', pendingRows: 1 });
      expect(result.details.counters).not.toHaveProperty('message');
    }
    expect((await app.counters.flush()).rows).toBe(1);
    expect(await check(app, { degradedAfterMs: 200 })).toMatchObject({ status: 'ok' });
  });

  it('refuses options that cannot work', async () => {
    const indicator = (await start()).app.get(CounterHealthIndicator);
    await expect(indicator.isHealthy('counters', { degradedAfterMs: 0 })).rejects.toThrow(CounterConfigurationError);
    await expect(indicator.isHealthy('counters', { downAfterFailedFlushes: 1.5 })).rejects.toThrow(
      'CounterHealthIndicator.isHealthy() option "downAfterFailedFlushes" must be a positive integer; got 1.5.',
    );
  });
});
