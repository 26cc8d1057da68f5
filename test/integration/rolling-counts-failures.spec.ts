import { describe, expect, it } from 'vitest';
import { CounterRollingSum } from '../../lib/index.js';
import { Story } from '../fixtures/rolling-count-entities.js';
import { RecordingLogger } from '../support/recording-logger.js';
import { DAY_MS, useRollingCountsSuite, windows, type StoryBody } from '../support/rolling-counts-suite.js';
import { TARGETS, unreachableClient } from '../support/topologies.js';

// The overlay of rolling counts never fails a response (G7): with Redis down it gives the values of the
// last flush, as `count` does; when the database cannot read them they keep their loaded values and a
// warning says why.
describe.each(TARGETS)('rolling counts overlaid through failures on %s, %s', (databaseName, topology) => {
  const suite = useRollingCountsSuite(databaseName, topology, 'rolling-counts-failures');
  const { counters, newStories, get, flush, unique } = suite;

  it('answers with the values of the last flush when Redis is unreachable', async () => {
    const title = `down-${unique()}`;
    const [a, b] = await newStories(2, title);
    await counters().increment(Story, a, 'view_count', 8);
    await flush();
    await counters().increment(Story, a, 'view_count', 1);
    await counters().increment(Story, b, 'view_count', 2);

    const down = await suite.startOther({ redis: unreachableClient(topology) });
    const started = Date.now();
    const page = await get(`/rolling/page?title=${title}&page=1&size=10`, down);
    expect((page.body.items as StoryBody[]).map(windows)).toEqual([
      { id: a, viewsToday: 8, viewsThisWeek: 8 },
      { id: b, viewsToday: 0, viewsThisWeek: 0 },
    ]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await down.counters.count(Story, a, 'view_count', { since: Date.now() - DAY_MS })).toBe(8);
  });

  it('leaves the rolling counts as loaded, and logs a warning, when the database cannot read them', async () => {
    // A database of this test's own whose rolling sums are gone: every read of them fails.
    const app = await suite.startOther({ database: await suite.newDatabase(), synchronize: true });
    const logger = new RecordingLogger();
    app.app.useLogger(logger);
    const runner = app.dataSource.createQueryRunner();
    await runner.dropTable(app.dataSource.getMetadata(CounterRollingSum).tablePath);
    await runner.release();
    await app.dataSource.getRepository(Story).insert({ id: 1, title: 'broken' });
    await app.counters.increment(Story, 1, 'like_count', 3);

    const { body } = await get('/rolling/stories/1', app);
    expect(body).toEqual({ id: 1, title: 'broken', viewCount: databaseName === 'sqlite' ? 0 : '0', likeCount: 3 });
    const warnings = logger.shown().filter(({ level }) => level === 'warn');
    expect(warnings.map(({ context }) => context)).toEqual(['CounterService']);
    expect(warnings[0].message).toMatch(
      /^Overlaying rolling counts failed \(The database failed while reading rolling counts \(.+\); nothing was changed\. Retry once the database is reachable\.\); they keep the values they were loaded with\.$/,
    );
  });
});
