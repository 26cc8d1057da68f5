import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { DataSourceOptions } from 'typeorm';

export type DatabaseName = 'postgres' | 'mariadb' | 'sqlite';

/** A database of its own for one test group: a PostgreSQL schema, a MariaDB database or an SQLite file. */
export interface TestDatabase {
  name: DatabaseName;
  options: DataSourceOptions;
  drop(): Promise<void>;
}

export const DATABASES: DatabaseName[] = (process.env.COUNTER_TEST_DATABASES ?? 'postgres,mariadb,sqlite')
  .split(',')
  .map((name) => name.trim() as DatabaseName);

const uniqueName = () => `ctr_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;

export async function createTestDatabase(name: DatabaseName): Promise<TestDatabase> {
  const unique = uniqueName();
  switch (name) {
    case 'postgres': {
      const connection = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' };
      const client = new pg.Client(connection);
      await client.connect();
      await client.query(`CREATE SCHEMA "${unique}"`);
      await client.end();
      return {
        name,
        options: { type: 'postgres', ...connection, username: connection.user, schema: unique, poolSize: 20 },
        drop: async () => {
          const dropper = new pg.Client(connection);
          await dropper.connect();
          await dropper.query(`DROP SCHEMA "${unique}" CASCADE`);
          await dropper.end();
        },
      };
    }
    case 'mariadb': {
      const connection = { host: '127.0.0.1', port: 3306, user: 'root', password: '' };
      const admin = await mysql.createConnection(connection);
      await admin.query(`CREATE DATABASE \`${unique}\``);
      await admin.end();
      return {
        name,
        options: { type: 'mariadb', ...connection, username: 'root', database: unique, poolSize: 20 },
        drop: async () => {
          const dropper = await mysql.createConnection(connection);
          await dropper.query(`DROP DATABASE \`${unique}\``);
          await dropper.end();
        },
      };
    }
    case 'sqlite': {
      const directory = mkdtempSync(join(tmpdir(), 'nestjs-counter-'));
      return {
        name,
        options: {
          type: 'better-sqlite3',
          database: join(directory, 'test.sqlite'),
          enableWAL: true,
          timeout: 10_000,
        } as DataSourceOptions,
        drop: async () => rmSync(directory, { recursive: true, force: true }),
      };
    }
  }
}
