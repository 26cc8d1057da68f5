import { readFileSync } from 'node:fs';
import { Logger } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';
import { Article } from '../fixtures/entities.js';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../../support/redis.js';
import { articleCounts, insertArticles } from '../../support/rows.js';

/** The ACL rules docs/OPERATING.md gives for the module's Redis user, from its `ACL SETUSER` line. */
function documentedRules(): string[] {
  const operating = readFileSync(new URL('../../docs/OPERATING.md', import.meta.url), 'utf8');
  const line = /`ACL SETUSER counters on >secret (.+?)`/.exec(operating);
  if (!line) throw new Error('docs/OPERATING.md gives no ACL SETUSER line for the module');
  return line[1].split(' ');
}

// docs/OPERATING.md's "The ACL it needs": a user with just those rules runs every path of the module (loads,
// changes, reads, flushes with DUMP, status) without a refusal. Redis only, so one database is enough.
describe('the Redis ACL docs/OPERATING.md documents', () => {
  const prefix = uniquePrefix('acl');
  const user = `${prefix}-user`;
  const redis = testRedis();
  let database: TestDatabase;
  let counter: CounterApp;

  beforeAll(async () => {
    const rules = documentedRules().map((rule) => (rule === '~ctr:*' ? `~${prefix}:*` : rule));
    await redis.acl('SETUSER', user, 'reset', 'on', '>secret', ...rules);
    await redis.acl('LOG', 'RESET');
    database = await createTestDatabase('sqlite');
    const { hostname, port } = new URL(REDIS_URL);
    counter = await startCounterApp({
      database: database.options,
      keyPrefix: prefix,
      counter: { redis: { host: hostname, port: Number(port || 6379), username: user, password: 'secret' } },
    });
  });

  afterAll(async () => {
    vi.restoreAllMocks();
    await counter?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    await redis.acl('DELUSER', user);
    redis.disconnect();
  });

  it('lets the module load, change, read and flush counters, with no command refused', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn');
    const ids = await insertArticles(counter.dataSource, [1, 2, 3]);
    expect(await Promise.all(ids.map((id, i) => counter.counters.increment(Article, id, 'like_count', i + 1)))).toEqual(
      [2, 4, 6],
    );
    expect(await counter.counters.decrement(Article, ids[2], 'like_count', 2)).toBe(4);
    // A keyed change and its retry: the idempotency record's commands are allowed too.
    for (const applied of [true, false])
      expect(await counter.counters.change(Article, ids[0], 'view_count', 1, { idempotencyKey: 'acl' })).toEqual({
        value: 1,
        applied,
      });
    const live = await counter.counters.getMany(Article, ids);
    expect(ids.map((id) => live.get(id))).toEqual([
      { like_count: 2, view_count: 1 },
      { like_count: 4, view_count: 0 },
      { like_count: 4, view_count: 0 },
    ]);
    expect((await counter.counters.status()).pendingRows).toBe(3);

    const report = await counter.counters.flush();
    expect(report.error).toBeUndefined();
    expect(report.rows).toBe(3);
    const stored = await articleCounts(counter.dataSource, ids);
    expect(ids.map((id) => stored.get(id)!.likes)).toEqual([2, 4, 4]);
    const status = await counter.counters.status();
    expect([status.redisAvailable, status.pendingRows, status.lastFlushError]).toEqual([true, 0, null]);

    // DUMP allowed: no warning of a fallback to HGETALL; and Redis logged no refusal for the user.
    expect(warn.mock.calls.map(([message]) => String(message))).toEqual([]);
    const refusals = (await redis.acl('LOG')) as unknown[][];
    expect(refusals.filter((entry) => entry.includes(user))).toEqual([]);
  });
});
