import { SchedulerRegistry } from '@nestjs/schedule';
import { describe, expect, it } from 'vitest';
import { CounterConfigurationError, type CounterModuleOptions } from '../../lib/index.js';
import { Article } from '../fixtures/entities.js';
import type { CounterApp } from '../support/counter-app.js';
import { useCounterApps } from '../support/counter-apps.js';
import { articleCounts, insertArticles } from '../../support/rows.js';

// `flushCron`: the scheduled flush as a cron job of the app's SchedulerRegistry instead of an interval.
describe('the flush on a cron expression', () => {
  const apps = useCounterApps('cron');

  function start(counter: CounterModuleOptions): Promise<CounterApp> {
    return apps.start({ counter });
  }

  it('registers a cron job that flushes, and removes it at shutdown', async () => {
    const app = await start({ flushEnabled: true, flushCron: '* * * * * *', flushOnShutdown: false });
    const scheduler = app.app.get(SchedulerRegistry);
    try {
      const jobs = [...scheduler.getCronJobs().keys()].filter((name) => name.startsWith('counter:flush:'));
      expect(jobs).toHaveLength(1);
      expect(scheduler.getIntervals().filter((name) => name.startsWith('counter:flush:'))).toEqual([]);
      expect(scheduler.getCronJob(jobs[0]).isActive).toBe(true);

      const [id] = await insertArticles(app.dataSource, [0]);
      await app.counters.increment(Article, id, 'like_count', 7);
      // Every second: the change is in the database within two ticks and a flush.
      const deadline = Date.now() + 3_000;
      let likes = 0;
      while (likes !== 7 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        likes = (await articleCounts(app.dataSource, [id])).get(id)!.likes;
      }
      expect(likes).toBe(7);
    } finally {
      await app.close();
    }
    expect([...scheduler.getCronJobs().keys()].filter((name) => name.startsWith('counter:flush:'))).toEqual([]);
  });

  it('refuses a cron expression beside flushIntervalMs, and one that is not cron syntax', async () => {
    await expect(start({ flushCron: '* * * * * *', flushIntervalMs: 500 })).rejects.toThrow(
      new CounterConfigurationError(
        'CounterModule options "flushIntervalMs" and "flushCron" were both given; the flush runs on one schedule: ' +
          'keep one of them.',
      ),
    );
    await expect(start({ flushCron: '' })).rejects.toThrow(
      'CounterModule option "flushCron" must be a cron expression; got .',
    );
    const error = await start({ flushEnabled: true, flushCron: 'every second' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CounterConfigurationError);
    expect((error as Error).message).toMatch(
      /^CounterModule option "flushCron" must be a cron expression .*"every second" is not one/,
    );
  });
});
