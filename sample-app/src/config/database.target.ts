import { createHash } from 'node:crypto';
import { DEFAULT_SQLITE_FILE } from './app.defaults.js';

/** The database the app talks to, as chosen by DATABASE_URL. */
export type DatabaseTarget =
  | { kind: 'sqlite'; file: string; identity: string }
  | { kind: 'postgres' | 'mariadb'; url: string; identity: string };

const KINDS: Record<string, 'postgres' | 'mariadb'> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  mysql: 'mariadb',
  mariadb: 'mariadb',
};

/**
 * SQLite by default; PostgreSQL for `postgres://`, MariaDB/MySQL for `mysql://` or `mariadb://`.
 * `identity` is a short hash naming the database (host, port, name; never the password), so that
 * counters of different databases never share Redis keys.
 */
export function databaseTarget(databaseUrl: string | undefined): DatabaseTarget {
  if (!databaseUrl) return { kind: 'sqlite', file: DEFAULT_SQLITE_FILE, identity: shortHash(DEFAULT_SQLITE_FILE) };
  let parsed: URL;
  try {
    parsed = new URL(databaseUrl);
  } catch {
    throw new Error('DATABASE_URL is not a valid URL (expected postgres://…, mysql://… or mariadb://…).');
  }
  const kind = KINDS[parsed.protocol.replace(/:$/, '')];
  if (!kind) {
    throw new Error(`DATABASE_URL uses "${parsed.protocol}"; expected postgres://…, mysql://… or mariadb://….`);
  }
  return { kind, url: databaseUrl, identity: shortHash(`${kind}://${parsed.host}${parsed.pathname}`) };
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8);
}
