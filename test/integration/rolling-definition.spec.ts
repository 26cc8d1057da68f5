import type { INestApplication } from '@nestjs/common';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Counted,
  CounterConfigurationError,
  CounterBucket,
  CounterLedgerEntry,
  CounterModule,
  CounterRollingSum,
  CounterRollingWindow,
  InvalidCounterDefinitionError,
  type CountedOptions,
  type CounterModuleOptions,
} from '../../lib/index.js';
import { CounterRegistry } from '../../lib/counter.registry.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, testRedis, uniquePrefix } from '../../support/redis.js';
import { NestHarness } from '../support/nest-harness.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const TABLES = [CounterLedgerEntry, CounterBucket, CounterRollingWindow, CounterRollingSum];

/** An entity whose one counter, `hits`, is declared with `options`. */
function entityWith(options: CountedOptions) {
  @Entity('rolling_definition')
  class Ranked {
    @PrimaryColumn({ type: 'int' })
    id!: number;

    @Counted('hits', options)
    @Column({ name: 'hits', type: 'int', default: 0 })
    hits!: number;
  }
  return Ranked;
}

/** The error a bootstrap fails with, or undefined. */
async function bootstrapError(start: () => Promise<INestApplication>): Promise<unknown> {
  return start().then(
    () => undefined,
    (error: unknown) => error,
  );
}

// Rolling windows are declared on a windowed counter: whole numbers of its finest granularity, kept
// in their tables, no longer than their buckets are kept; anything else is refused at bootstrap.
describe.each(DATABASES)('rolling window declarations on %s', (databaseName) => {
  const redis = testRedis();
  const harness = new NestHarness();
  const prefix = uniquePrefix('rolling-definition');
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

  const start = (options: CountedOptions, counter: CounterModuleOptions = {}, tables: unknown[] = TABLES) =>
    harness.start({
      database: database.options,
      entities: [entityWith(options), ...(tables as Array<new () => unknown>)],
      imports: [CounterModule.forRoot({ redis, keyPrefix: prefix, flushEnabled: false, ...counter })],
    });

  it('keeps the declared windows on the counter, in seconds', async () => {
    const app = await start(
      { windows: ['hour', 'day'], rolling: ['24h', '7d', '3h'] },
      {
        bucketRetentionMs: { hour: 8 * DAY_MS },
      },
    );
    const [counted] = app.get(CounterRegistry).all();
    expect(counted.counters[0].rolling).toEqual([
      { name: '24h', seconds: 86_400 },
      { name: '7d', seconds: 604_800 },
      { name: '3h', seconds: 10_800 },
    ]);
    await harness.close(app);
  });

  it.each([
    ['a number without a unit', ['24'], 'rolling windows ["24"]'],
    ['minutes', ['90m'], "'<n>h' or '<n>d'"],
    ['zero hours', ['0h'], "'<n>h' or '<n>d'"],
    ['a leading zero', ['024h'], "'<n>h' or '<n>d'"],
    ['a string instead of an array', '24h', 'give an array'],
    ['one length twice', ['24h', '1d'], 'distinct'],
  ])('refuses %s', async (_, rolling, fragment) => {
    const error = await bootstrapError(() => start({ windows: ['hour', 'day'], rolling: rolling as never }));
    expect(error).toBeInstanceOf(InvalidCounterDefinitionError);
    expect((error as Error).message).toContain('Ranked.hits');
    expect((error as Error).message).toContain(fragment);
  });

  it('refuses hours on a counter kept in days, and rolling windows without windows', async () => {
    const hours = await bootstrapError(() => start({ windows: ['day'], rolling: ['36h'] }));
    expect(hours).toBeInstanceOf(InvalidCounterDefinitionError);
    expect((hours as Error).message).toContain('a whole number of days');
    const windowless = await bootstrapError(() => start({ rolling: ['24h'] }));
    expect(windowless).toBeInstanceOf(InvalidCounterDefinitionError);
    expect((windowless as Error).message).toContain("windows: ['hour', 'day'], rolling: ['24h']");
    // A whole number of days in hours is a window of days.
    await harness.close(await start({ windows: ['day'], rolling: ['48h'] }));
  });

  it('refuses rolling windows without their tables in the data source', async () => {
    const error = await bootstrapError(() =>
      start({ windows: ['hour'], rolling: ['24h'] }, {}, [CounterLedgerEntry, CounterBucket, CounterRollingWindow]),
    );
    expect(error).toBeInstanceOf(CounterConfigurationError);
    expect((error as Error).message).toContain('CounterRollingWindow and CounterRollingSum');
  });

  it('refuses a window longer than its buckets are kept', async () => {
    const eightDays = { windows: ['hour', 'day'], rolling: ['8d'] } as const;
    // By default hours are kept seven days: a '7d' window fits, an '8d' one does not.
    await harness.close(await start({ windows: ['hour', 'day'], rolling: ['24h', '7d'] }));
    const byDefault = await bootstrapError(() => start(eightDays));
    expect(byDefault).toBeInstanceOf(CounterConfigurationError);
    expect((byDefault as Error).message).toContain('bucketRetentionMs.hour');
    const short = await bootstrapError(() => start(eightDays, { bucketRetentionMs: { hour: 8 * DAY_MS - 1 } }));
    expect(short).toBeInstanceOf(CounterConfigurationError);
    await harness.close(await start(eightDays, { bucketRetentionMs: { hour: 8 * DAY_MS } }));
    // Days are kept 400 days by default.
    await harness.close(await start({ windows: ['day'], rolling: ['400d'] }));
    expect(await bootstrapError(() => start({ windows: ['day'], rolling: ['401d'] }))).toBeInstanceOf(
      CounterConfigurationError,
    );
  });
});
