import type { INestApplication } from '@nestjs/common';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Counted,
  CounterBucket,
  CounterConfigurationError,
  CounterLedgerEntry,
  CounterModule,
  CounterRollingSum,
  CounterRollingWindow,
  InvalidCounterDefinitionError,
  RollingCount,
  type CountedOptions,
  type CounterModuleOptions,
} from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, testRedis, uniquePrefix } from '../../support/redis.js';
import { NestHarness } from '../support/nest-harness.js';

const DAY_MS = 24 * 3_600_000;
const TABLES = [CounterLedgerEntry, CounterBucket, CounterRollingWindow, CounterRollingSum];
const WINDOWED: CountedOptions = { windows: ['hour', 'day'], rolling: ['24h', '7d'] };

/** An entity whose counter `hits` is declared with `options`, and whose `recent` counts `counter` over `window`. */
function entityWith(options: CountedOptions, counter: string, window: string) {
  @Entity('rolling_count_definition')
  class Tracked {
    @PrimaryColumn({ type: 'int' })
    id!: number;

    @Counted('hits', options)
    @Column({ name: 'hits', type: 'int', default: 0 })
    hits!: number;

    @Counted('plain')
    @Column({ name: 'plain', type: 'int', default: 0 })
    plain!: number;

    @RollingCount(counter, window)
    recent?: number;
  }
  return Tracked;
}

/** An entity whose rolling count is a column. */
@Entity('rolling_count_column')
class ColumnCount {
  @PrimaryColumn({ type: 'int' })
  id!: number;

  @Counted('hits', WINDOWED)
  @Column({ name: 'hits', type: 'int', default: 0 })
  hits!: number;

  @RollingCount('hits', '24h')
  @Column({ name: 'recent', type: 'int', default: 0 })
  recent!: number;
}

// A rolling count names a counter of its entity and one of the counter's declared rolling windows, on a
// property that is not a column; anything else is refused at bootstrap, with the fix in the message.
describe.each(DATABASES)('rolling count declarations on %s', (databaseName) => {
  const redis = testRedis();
  const harness = new NestHarness();
  const prefix = uniquePrefix('rolling-count-definition');
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase(databaseName);
  });
  afterAll(async () => {
    await harness.closeAll();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  const start = (entity: new () => unknown, counter: CounterModuleOptions = {}) =>
    harness.start({
      database: database.options,
      entities: [entity, ...TABLES],
      imports: [CounterModule.forRoot({ redis, keyPrefix: prefix, flushEnabled: false, ...counter })],
    });
  const refusal = (entity: new () => unknown, counter?: CounterModuleOptions): Promise<unknown> =>
    start(entity, counter).then(
      (app: INestApplication) => app,
      (error: unknown) => error,
    );

  it("binds the property to the counter's declared window of that length", async () => {
    const app = await start(entityWith(WINDOWED, 'hits', '1d'));
    const [counted] = app.get(CounterRegistry).all();
    expect(counted.rollingCounts).toHaveLength(1);
    const [recent] = counted.rollingCounts;
    expect([recent.propertyName, recent.counter.name, recent.window]).toEqual([
      'recent',
      'hits',
      { name: '24h', seconds: 86_400 },
    ]);
  });

  it('refuses a property that is a column', async () => {
    const error = await refusal(ColumnCount);
    expect(error).toBeInstanceOf(InvalidCounterDefinitionError);
    expect((error as Error).message).toBe(
      "ColumnCount.recent is a column, so @RollingCount() cannot fill it: the overlay writes a window's count " +
        'into a property the database does not load. Remove its @Column(), or put @RollingCount() on another ' +
        'property.',
    );
  });

  it('refuses an unknown counter, naming the known ones', async () => {
    const error = await refusal(entityWith(WINDOWED, 'hitz', '24h'));
    expect(error).toBeInstanceOf(InvalidCounterDefinitionError);
    expect(error).toMatchObject({ entity: 'Tracked', counter: 'hitz' });
    expect((error as Error).message).toBe(
      'Tracked.recent is a @RollingCount() of "hitz", which is not a counter of Tracked. Name one of its ' +
        'counters (hits, plain), declared with @Counted().',
    );
  });

  it('refuses a counter without windows', async () => {
    const error = await refusal(entityWith(WINDOWED, 'plain', '24h'));
    expect(error).toBeInstanceOf(InvalidCounterDefinitionError);
    expect((error as Error).message).toBe(
      "Tracked.recent is a @RollingCount() of plain, which keeps no counts over time: declare @Counted('plain', " +
        "{ windows: ['hour', 'day'], rolling: ['24h'] }).",
    );
  });

  it('refuses a length that is not whole hours or days of its finest bucket', async () => {
    for (const [options, window, finest] of [
      [WINDOWED, '90m', 'hour'],
      [WINDOWED, '024h', 'hour'],
      [{ windows: ['day'], rolling: ['2d'] }, '36h', 'day'],
    ] as const) {
      const error = await refusal(entityWith(options, 'hits', window));
      expect(error).toBeInstanceOf(InvalidCounterDefinitionError);
      expect((error as Error).message).toBe(
        `Tracked.recent is a @RollingCount() over "${window}"; give a length '<n>h' or '<n>d', a whole number ` +
          `of ${finest}s (its counter's finest granularity): @RollingCount('view_count', '24h').`,
      );
    }
  });

  it('refuses a length beyond the buckets kept', async () => {
    const error = await refusal(entityWith(WINDOWED, 'hits', '8d'));
    expect(error).toBeInstanceOf(CounterConfigurationError);
    expect(error).toMatchObject({ entity: 'Tracked', counter: 'hits' });
    expect((error as Error).message).toBe(
      "Tracked.recent is a @RollingCount() over '8d', which counts hour buckets further back than " +
        'bucketRetentionMs.hour (604800000 ms) keeps them. Keep hours longer (bucketRetentionMs.hour), or count ' +
        'over a shorter window.',
    );
  });

  it("refuses a length the counter does not declare in 'rolling', saying how to add it", async () => {
    const error = await refusal(entityWith(WINDOWED, 'hits', '3h'), { bucketRetentionMs: { hour: 8 * DAY_MS } });
    expect(error).toBeInstanceOf(InvalidCounterDefinitionError);
    expect((error as Error).message).toBe(
      "Tracked.recent is a @RollingCount() over '3h', which is not one of hits's rolling windows ('24h', '7d'): " +
        'the overlay reads the sum the flush keeps per row and window. Add it: ' +
        "@Counted('hits', { windows: [...], rolling: ['24h', '7d', '3h'] }).",
    );
  });
});
