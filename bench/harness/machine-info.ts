import { cpus, totalmem } from 'node:os';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import type { BenchRun } from './bench-results.js';
import { REDIS_URL, RESP2 } from './redis-targets.js';
import { MARIADB_CONNECTION, POSTGRES_CONNECTION } from './databases.js';

/** What the figures were measured on: they are only comparable within one run, on one machine. */
export async function machineInfo(): Promise<BenchRun['machine']> {
  const redis = new Redis(REDIS_URL, RESP2);
  const info = await redis.info('server').finally(() => redis.disconnect());
  const postgres = new pg.Client(POSTGRES_CONNECTION);
  await postgres.connect();
  const { rows } = await postgres
    .query<{ server_version: string }>('SHOW server_version')
    .finally(() => postgres.end());
  const mariadb = await mysql.createConnection(MARIADB_CONNECTION);
  const [versions] = await mariadb.query('SELECT VERSION() AS version').finally(() => mariadb.end());
  const sqlite = await new DataSource({ type: 'better-sqlite3', database: ':memory:' }).initialize();
  const [{ version: sqliteVersion }] = await sqlite.query('SELECT sqlite_version() AS version');
  await sqlite.destroy();
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    redis: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown',
    postgres: rows[0].server_version,
    mariadb: (versions as Array<{ version: string }>)[0].version,
    sqlite: sqliteVersion,
  };
}
