import { createTestDatabase, type DatabaseName, type TestDatabase } from '../../support/databases.js';

export type { DatabaseName, TestDatabase };

export const POSTGRES_CONNECTION = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
export const MARIADB_CONNECTION = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };

/**
 * A database of the benchmark's own (a PostgreSQL schema, a MariaDB database, an SQLite file), dropped
 * afterwards: the same the test suite uses.
 */
export function benchDatabase(name: DatabaseName): Promise<TestDatabase> {
  return createTestDatabase(name);
}

/** Runs `body` with a fresh database of its own and drops it afterwards. */
export async function withDatabase<T>(name: DatabaseName, body: (database: TestDatabase) => Promise<T>): Promise<T> {
  const database = await benchDatabase(name);
  try {
    return await body(database);
  } finally {
    await database.drop();
  }
}
