import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Article } from '../fixtures/entities.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { RedisServer } from '../../support/redis-server.js';
import { RESP2, uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';

const DUMP_FALLBACKS = 'nestjs_counter_dump_fallbacks_total';

// A claim whose DUMP payload the parser does not read (a version or form it was not shown) is read
// with HGETALL: flushed all the same, counted in `dump_fallbacks_total{reason="unreadable"}` and
// warned of once. A server makes such a payload for a batch hash with a field expiration (Redis 7.4+,
// Valkey 9+: a hash type of its own), the one form the library never writes: the test gives the
// pending hash's '#wide' field a TTL. Skipped on servers without hash field expiration.
describe('a claimed batch whose DUMP the parser does not read', () => {
  const keyPrefix = uniquePrefix('dump-fallback');
  const registry = new Registry();
  let server: RedisServer;
  let inspector: Redis;
  let database: TestDatabase;
  let app: CounterApp | undefined;
  let fieldExpiration = false;

  beforeAll(async () => {
    server = await RedisServer.start();
    inspector = new Redis(server.url, RESP2);
    fieldExpiration = ((await inspector.command('INFO', 'hpexpire')) as unknown[])[0] != null;
    database = await createTestDatabase('sqlite');
  });

  afterAll(async () => {
    await app?.close();
    inspector?.disconnect();
    await database?.drop();
    await server?.stop();
  });

  it('is read with HGETALL, counted as unreadable and warned of once', async (context) => {
    if (!fieldExpiration) context.skip('the server has no hash field expiration (HPEXPIRE)');
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    app = await startCounterApp({
      database: database.options,
      keyPrefix,
      counter: { redis: server.url, metrics: { registry }, shards: 1, flushOnShutdown: false },
    });
    const ids = await insertArticles(app.dataSource, [0, 0], 1);
    try {
      for (const round of [1, 2]) {
        for (const id of ids) await app.counters.increment(Article, id, 'like_count', round);
        await app.counters.increment(Article, ids[0], 'view_count', 10 * round);
        const [pending] = await inspector.keys(`${keyPrefix}*:pending`);
        expect(await inspector.hexists(pending, '#wide')).toBe(1);
        expect(await inspector.call('HPEXPIRE', pending, '600000', 'FIELDS', '1', '#wide')).toEqual([1]);
        const report = await app.counters.flush();
        expect(report.error).toBeUndefined();
        expect(report).toMatchObject({ rows: 2, batches: 1 });
      }
      expect(await articleCounts(app.dataSource, ids)).toEqual(
        new Map([
          [ids[0], { likes: 3, views: 31 }],
          [ids[1], { likes: 3, views: 1 }],
        ]),
      );
      const { values } = await registry.getSingleMetric(DUMP_FALLBACKS)!.get();
      expect(values.map(({ labels, value }) => [labels.reason, value])).toEqual([['unreadable', 2]]);
      const warnings = warn.mock.calls.map(([message]) => String(message)).filter((text) => text.includes('DUMP'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/could not be read from its DUMP \(a DUMP payload of type \d+, not a hash/);
    } finally {
      warn.mockRestore();
    }
  });
});
