import { Column, Entity, PrimaryColumn } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Counted, CounterConfigurationError, CounterRollingSum, CounterRollingWindow } from '../../lib/index.js';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, uniquePrefix } from '../../support/redis.js';
import { startCounterApp, type CounterApp } from '../support/counter-app.js';
import { inspectionClient } from '../support/topologies.js';

/** Ids like short links, where 'abc' and 'ABC' are two rows: a key that compares by bytes. */
@Entity('short_link')
class ShortLink {
  @PrimaryColumn({ type: 'varchar', length: 16, charset: 'utf8mb4', collation: 'utf8mb4_bin' })
  id!: string;

  @Counted('visit_count', { windows: ['hour', 'day'], rolling: ['24h'] })
  @Column({ name: 'visit_count', type: 'int', default: 0 })
  visitCount!: number;
}

const ENTITIES = [ShortLink, CounterRollingWindow, CounterRollingSum];

// MySQL and MariaDB compare text by collation, and the counter tables' row_id takes the database's
// default, which ignores case: two rows of an entity whose key does not would share buckets and sums.
// The module refuses to start then, naming the statement that makes row_id binary.
describe.runIf(DATABASES.includes('mariadb'))('ids that differ only in case, on MariaDB', () => {
  const prefix = uniquePrefix('collation');
  const redis = inspectionClient('standalone');
  let database: TestDatabase;
  let app: CounterApp | undefined;
  const start = (synchronize: boolean) =>
    startCounterApp({ database: database.options, keyPrefix: prefix, synchronize, entities: ENTITIES });

  beforeAll(async () => {
    database = await createTestDatabase('mariadb');
  });
  afterAll(async () => {
    await app?.close();
    await database?.drop();
    await deleteKeys(redis, prefix);
    redis.disconnect();
  });

  it('refuses to start while row_id ignores case, naming the statement for each table', async () => {
    const started = start(true);
    await expect(started).rejects.toBeInstanceOf(CounterConfigurationError);
    await expect(started).rejects.toThrow(
      "ShortLink's key compares as utf8mb4_bin, but counter_bucket.row_id (CounterBucket) as " +
        'utf8mb4_general_ci, which may take two of its ids for one and add their buckets or sums together. ' +
        'Make the column binary: ALTER TABLE counter_bucket MODIFY row_id VARCHAR(255) CHARACTER SET utf8mb4 ' +
        'COLLATE utf8mb4_bin NOT NULL.',
    );
    await expect(started).rejects.toThrow('ALTER TABLE counter_rolling_sum MODIFY row_id');
  });

  it('counts ids apart once the statements ran, and synchronize leaves the columns binary', async () => {
    const admin = await startRaw();
    for (const table of ['counter_bucket', 'counter_rolling_sum'])
      await admin.query(
        `ALTER TABLE ${table} MODIFY row_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL`,
      );
    await admin.destroy();

    app = await start(true);
    await app.dataSource.getRepository(ShortLink).insert([{ id: 'abc' }, { id: 'ABC' }]);
    await app.counters.increment(ShortLink, 'abc', 'visit_count', 1);
    await app.counters.increment(ShortLink, 'ABC', 'visit_count', 2);
    expect((await app.counters.flush()).error).toBeUndefined();

    const day = { since: Date.now() - 86_400_000 };
    expect(await app.counters.count(ShortLink, 'abc', 'visit_count', day)).toBe(1);
    expect(await app.counters.count(ShortLink, 'ABC', 'visit_count', day)).toBe(2);
    expect(await app.counters.top(ShortLink, 'visit_count', { ...day, limit: 10 })).toEqual([
      { id: 'ABC', value: 2 },
      { id: 'abc', value: 1 },
    ]);
  });

  /** A DataSource of the test's own on the database, for the statements a user would run. */
  async function startRaw() {
    const { DataSource } = await import('typeorm');
    return new DataSource({ ...database.options, entities: [] }).initialize();
  }
});
