import type { DataSource } from 'typeorm';
import { MESSAGES } from '../counter.messages.js';
import { CounterConfigurationError } from '../exceptions/counter-configuration.error.js';
import type { CounterDialect } from './counter-dialect.js';
import { mysqlDialect } from './mysql.dialect.js';
import { postgresDialect } from './postgres.dialect.js';
import { sqliteDialect } from './sqlite.dialect.js';

export function dialectFor(dataSource: DataSource): CounterDialect {
  const type = String(dataSource.options.type);
  switch (type) {
    case 'postgres':
      return postgresDialect;
    case 'mysql':
    case 'mariadb':
      return mysqlDialect;
    // TypeORM 1.x runs SQLite in Node through better-sqlite3 alone (its `sqlite` driver, node-sqlite3, is
    // gone); sql.js and the mobile drivers are not tested here, so they are refused like any other.
    case 'better-sqlite3':
      return sqliteDialect;
    default:
      throw new CounterConfigurationError(MESSAGES.unsupportedDatabase(type));
  }
}
