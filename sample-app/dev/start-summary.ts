import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigService } from '@nestjs/config';
import type * as AppDefaults from '../src/config/app.defaults.js';
import type * as CounterOptions from '../src/config/counter-options.factory.js';
import type * as DatabaseTargets from '../src/config/database.target.js';
import type { DatabaseTarget } from '../src/config/database.target.js';
import type { RedisForTheApp } from './redis.bootstrap.js';
import { redact } from './redis.probe.js';

/** What `npm start` tells once the app serves. */
export interface StartSummary {
  port: number;
  redis: RedisForTheApp;
  database: DatabaseTarget;
  keyPrefix: string;
}

/**
 * What the app whose main is `main` uses, read with its own config modules (their compiled copies
 * beside `main`: the SQLite file's default path is relative to them) from the environment, as its
 * ConfigModule reads it.
 */
export async function readStartSummary(main: string, redis: RedisForTheApp): Promise<StartSummary> {
  const load = <T>(file: string) => import(pathToFileURL(resolve(dirname(main), file)).href) as Promise<T>;
  const defaults = await load<typeof AppDefaults>('config/app.defaults.js');
  const { databaseTarget } = await load<typeof DatabaseTargets>('config/database.target.js');
  const { counterKeyPrefix } = await load<typeof CounterOptions>('config/counter-options.factory.js');
  const config = new ConfigService();
  return {
    port: Number(config.get<string>('PORT') || defaults.DEFAULT_PORT),
    redis,
    database: databaseTarget(config.get<string>('DATABASE_URL')),
    keyPrefix: counterKeyPrefix(config),
  };
}

/** The lines `npm start` prints once the app serves: where it is, what it uses, how to stop it. */
export function startSummaryLines(summary: StartSummary): string[] {
  const redis = summary.redis.throwaway
    ? 'throwaway: started for this run, no persistence, stopped with the app'
    : 'shared: the one at REDIS_URL, or 127.0.0.1:6379 when unset';
  const { database } = summary;
  const where =
    database.kind === 'sqlite'
      ? `SQLite file ${database.file}`
      : `${database.kind === 'postgres' ? 'PostgreSQL' : 'MariaDB/MySQL'} at ${redact(database.url)}`;
  return [
    `npm start: the online judge serves http://localhost:${summary.port}`,
    `  Redis       ${redact(summary.redis.url)} (${redis})`,
    `  database    ${where} (DATABASE_URL picks another)`,
    `  key prefix  ${summary.keyPrefix} (one per database; COUNTER_KEY_PREFIX overrides it)`,
    '  stop        Ctrl-C: the changes still in Redis are flushed to the database first',
  ];
}
