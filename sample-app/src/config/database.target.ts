import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { DEFAULT_SQLITE_FILE } from './app.defaults.js';

/** The database the app talks to, as chosen by DATABASE_URL. */
export type DatabaseTarget =
  { kind: 'sqlite'; file: string; identity: string } | { kind: 'postgres' | 'mariadb'; url: string; identity: string };

const KINDS: Record<string, 'postgres' | 'mariadb'> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  mysql: 'mariadb',
  mariadb: 'mariadb',
};

const EXPECTED = 'expected postgres://…, mysql://…, mariadb://… or sqlite:///path/to/file.sqlite';

/**
 * SQLite by default (or `sqlite:///path/to/file.sqlite`); PostgreSQL for `postgres://`, MariaDB/MySQL
 * for `mysql://` or `mariadb://`. `identity` is a short hash naming the database (host, port, name, or
 * the SQLite file; never the password), so that counters of different databases never share Redis keys.
 */
export function databaseTarget(databaseUrl: string | undefined): DatabaseTarget {
  if (!databaseUrl) return sqliteTarget(DEFAULT_SQLITE_FILE);
  let parsed: URL;
  try {
    parsed = new URL(databaseUrl);
  } catch {
    throw new Error(`DATABASE_URL is not a valid URL (${EXPECTED}).`);
  }
  if (parsed.protocol === 'sqlite:') {
    if (parsed.host !== '' || parsed.pathname === '' || parsed.pathname === '/') {
      throw new Error(`DATABASE_URL "${databaseUrl}" names no SQLite file path (${EXPECTED}).`);
    }
    // `sqlite:data/judge.sqlite` (no slashes) is relative to the working directory.
    return sqliteTarget(resolve(decodeURIComponent(parsed.pathname)));
  }
  const kind = KINDS[parsed.protocol.replace(/:$/, '')];
  if (!kind) {
    throw new Error(`DATABASE_URL uses "${parsed.protocol}"; ${EXPECTED}.`);
  }
  return { kind, url: databaseUrl, identity: shortHash(`${kind}://${parsed.host}${parsed.pathname}`) };
}

function sqliteTarget(file: string): DatabaseTarget {
  return { kind: 'sqlite', file, identity: shortHash(file) };
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8);
}
