import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { CounterConfigurationError } from '../../lib/index.js';
import { dialectFor } from '../../lib/sql/dialect-for.js';
import { mysqlDialect } from '../../lib/sql/mysql.dialect.js';
import { postgresDialect } from '../../lib/sql/postgres.dialect.js';
import { sqliteDialect } from '../../lib/sql/sqlite.dialect.js';

// Data sources are only constructed, never initialized: a driver loads its package then, and connects
// only on initialize().
describe('which data sources the module writes to', () => {
  it.each([
    ['postgres', postgresDialect],
    ['mysql', mysqlDialect],
    ['mariadb', mysqlDialect],
    ['better-sqlite3', sqliteDialect],
  ] as const)('%s', (type, dialect) => {
    expect(dialectFor(new DataSource({ type, database: ':memory:' } as never))).toBe(dialect);
  });

  // CockroachDB speaks PostgreSQL's protocol (TypeORM drives it with pg) but runs transactions its own
  // way: refused by name at bootstrap rather than flushed into with PostgreSQL's statements.
  it('refuses any other, naming the supported ones and the type it got', () => {
    const cockroach = new DataSource({ type: 'cockroachdb', database: 'test', timeTravelQueries: false });
    expect(() => dialectFor(cockroach)).toThrow(CounterConfigurationError);
    expect(() => dialectFor(cockroach)).toThrow(
      'CounterModule supports PostgreSQL, MySQL/MariaDB and SQLite (better-sqlite3); this data source is "cockroachdb".',
    );
  });
});
