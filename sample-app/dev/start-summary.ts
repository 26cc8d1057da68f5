import { redact } from './redis.probe.js';
import type { DatabaseTarget } from '../src/config/database.target.js';

/** What `npm start` tells once the app serves. */
export interface StartSummary {
  port: number;
  redisUrl: string;
  /** Started for this run by the launcher, rather than the Redis at REDIS_URL. */
  throwawayRedis: boolean;
  database: DatabaseTarget;
  keyPrefix: string;
}

/** The lines `npm start` prints once the app serves: where it is, what it uses, how to stop it. */
export function startSummary(summary: StartSummary): string[] {
  const redis = summary.throwawayRedis
    ? 'throwaway: started for this run, no persistence, stopped with the app'
    : 'shared: the one at REDIS_URL, or 127.0.0.1:6379 when unset';
  const database =
    summary.database.kind === 'sqlite'
      ? `SQLite file ${summary.database.file}`
      : `${summary.database.kind === 'postgres' ? 'PostgreSQL' : 'MariaDB/MySQL'} at ${redact(summary.database.url)}`;
  return [
    `npm start: the online judge serves http://localhost:${summary.port}`,
    `  Redis       ${redact(summary.redisUrl)} (${redis})`,
    `  database    ${database} (DATABASE_URL picks another)`,
    `  key prefix  ${summary.keyPrefix} (one per database; COUNTER_KEY_PREFIX overrides it)`,
    '  stop        Ctrl-C: the changes still in Redis are flushed to the database first',
  ];
}
