import { fileURLToPath } from 'node:url';

/** Used when REDIS_URL is not set. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** Used when PORT is not set. */
export const DEFAULT_PORT = 3000;

/** The SQLite file used when DATABASE_URL is not set: sample-app/data/judge.sqlite (from src/ or dist/). */
export const DEFAULT_SQLITE_FILE = fileURLToPath(new URL('../../data/judge.sqlite', import.meta.url));
