import mysql from 'mysql2/promise';
import pg from 'pg';
import { DataSource, type DataSourceOptions, type EntityManager } from 'typeorm';
import { CounterLedgerEntry } from '../../lib/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/databases.js';

/** The databases with read replicas in TypeORM (`replication`): SQLite has none. */
export type ReplicatedDatabaseName = 'postgres' | 'mariadb';

export const REPLICATED_DATABASES = (process.env.COUNTER_TEST_DATABASES ?? 'postgres,mariadb,sqlite')
  .split(',')
  .map((name) => name.trim())
  .filter((name): name is ReplicatedDatabaseName => name === 'postgres' || name === 'mariadb');

/**
 * A primary and a "replica" that never replicates: a second database with the same tables, which the
 * test fills with stale values. `options` configure TypeORM's `replication` with the two, so whatever
 * TypeORM routes to a replica reads the stale values, and a read from the primary is told apart.
 */
export interface ReplicatedTestDatabase {
  options: DataSourceOptions;
  /** The replica's own data source (tables created), to write its stale rows. */
  replica: DataSource;
  /** Runs `work` on a connection to the primary (never the replica), released after. */
  onPrimary<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T>): Promise<T>;
  drop(): Promise<void>;
}

export async function createReplicatedTestDatabase(
  name: ReplicatedDatabaseName,
  entities: Array<new () => unknown>,
): Promise<ReplicatedTestDatabase> {
  const primary: TestDatabase = await createTestDatabase(name);
  const stale = await createStaleReplica(name, primary.options);
  const replica = new DataSource({
    ...stale.options,
    entities: [...entities, CounterLedgerEntry],
    synchronize: true,
  } as DataSourceOptions);
  await replica.initialize();
  return {
    options: stale.replicated,
    replica,
    async onPrimary(dataSource, work) {
      const runner = dataSource.createQueryRunner('master');
      try {
        return await work(runner.manager);
      } finally {
        await runner.release();
      }
    },
    async drop() {
      await replica.destroy();
      await stale.drop();
      await primary.drop();
    },
  };
}

/** A second database holding the primary's tables: PostgreSQL the same schema in another database, MariaDB another database. */
async function createStaleReplica(name: ReplicatedDatabaseName, primary: DataSourceOptions) {
  if (name === 'postgres') {
    const { host, port, username, database, schema, poolSize } = primary as DataSourceOptions & {
      host: string;
      port: number;
      username: string;
      database: string;
      schema: string;
      poolSize: number;
    };
    const replicaDatabase = `${schema}_replica`;
    const admin = new pg.Client({ host, port, user: username, database });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${replicaDatabase}"`);
    await admin.end();
    const inReplica = new pg.Client({ host, port, user: username, database: replicaDatabase });
    await inReplica.connect();
    await inReplica.query(`CREATE SCHEMA "${schema}"`);
    await inReplica.end();
    const server = { host, port, username };
    return {
      options: { type: 'postgres', ...server, database: replicaDatabase, schema } as DataSourceOptions,
      replicated: {
        type: 'postgres',
        schema,
        poolSize,
        replication: { master: { ...server, database }, slaves: [{ ...server, database: replicaDatabase }] },
      } as DataSourceOptions,
      drop: async () => {
        const dropper = new pg.Client({ host, port, user: username, database });
        await dropper.connect();
        await dropper.query(`DROP DATABASE "${replicaDatabase}" WITH (FORCE)`);
        await dropper.end();
      },
    };
  }
  const { host, port, username, password, database, poolSize } = primary as DataSourceOptions & {
    host: string;
    port: number;
    username: string;
    password: string;
    database: string;
    poolSize: number;
  };
  const replicaDatabase = `${database}_replica`;
  const connection = { host, port, user: username, password };
  const admin = await mysql.createConnection(connection);
  await admin.query(`CREATE DATABASE \`${replicaDatabase}\``);
  await admin.end();
  const server = { host, port, username, password };
  return {
    options: { type: 'mariadb', ...server, database: replicaDatabase } as DataSourceOptions,
    replicated: {
      type: 'mariadb',
      poolSize,
      replication: { master: { ...server, database }, slaves: [{ ...server, database: replicaDatabase }] },
    } as DataSourceOptions,
    drop: async () => {
      const dropper = await mysql.createConnection(connection);
      await dropper.query(`DROP DATABASE \`${replicaDatabase}\``);
      await dropper.end();
    },
  };
}
