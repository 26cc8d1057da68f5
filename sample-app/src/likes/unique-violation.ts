import { QueryFailedError } from 'typeorm';

/** The code each driver gives a duplicate key: PostgreSQL's SQLSTATE, mysql2's name, better-sqlite3's. */
const DUPLICATE_KEY_CODES = new Set(['23505', 'ER_DUP_ENTRY', 'SQLITE_CONSTRAINT_UNIQUE']);

/** Whether a failed INSERT was refused by a unique key, on PostgreSQL, MariaDB/MySQL or SQLite. */
export function isUniqueViolation(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const { code } = error.driverError as { code?: unknown };
  return typeof code === 'string' && DUPLICATE_KEY_CODES.has(code);
}
