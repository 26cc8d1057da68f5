import { DataSource, type DataSourceOptions } from 'typeorm';
import { CounterLedgerEntry } from '../lib/index.js';
import { ENTITIES } from '../test/fixtures/entities.js';
import { SOURCED_ENTITIES } from '../test/fixtures/sourced-entities.js';
import type { TestDatabase } from './databases.js';

/**
 * A direct connection of the test's own to its database, with the tables created: for inserting rows
 * and reading the values the database really holds, without the counter module in between.
 */
export function openObserver(database: TestDatabase): Promise<DataSource> {
  return new DataSource({
    ...database.options,
    entities: [...ENTITIES, ...SOURCED_ENTITIES, CounterLedgerEntry],
    synchronize: true,
    logging: false,
  } as DataSourceOptions).initialize();
}
