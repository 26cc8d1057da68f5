// One deployment under test: a database of its own (a fresh PostgreSQL schema or MariaDB database), one
// key prefix in the shared Redis, the tables created once by the parent, and any number of app instances
// (chaos workers) started against them, with the load and the database sampler that watch them.
// `close()` kills every worker (stopped ones too), stops the load and the sampler, closes the proxies,
// drops the database and deletes the keys; useChaosScenario calls it after each test, whatever the test did.
import { DataSource, type DataSourceOptions } from 'typeorm';
import type { Redis } from 'ioredis';
import { CounterLedgerEntry } from '../../lib/index.js';
import { createTestDatabase, type DatabaseName, type TestDatabase } from '../../support/databases.js';
import { deleteKeys, REDIS_URL, testRedis, uniquePrefix } from '../../support/redis.js';
import { openObserver } from '../../support/observer.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import type { WorkerConfig } from '../worker/worker-protocol.js';
import { ChaosWorker } from './chaos-worker.js';
import type { CounterTarget } from './counter-targets.js';
import { DatabaseSampler } from './database-sampler.js';
import { LoadGenerator, type LoadOptions } from './load-generator.js';

/** Databases the scenarios run against: `CHAOS_DATABASES=postgres,mariadb`; PostgreSQL by default. */
export const CHAOS_DATABASES: DatabaseName[] = (process.env.CHAOS_DATABASES ?? 'postgres')
  .split(',')
  .map((name) => name.trim() as DatabaseName)
  .filter((name) => name !== ('' as DatabaseName));

export type WorkerCounterOptions = WorkerConfig['counter'];

export interface ChaosWorkerOptions {
  name: string;
  /** Overrides of the deployment's counter options for this instance. */
  counter?: WorkerCounterOptions;
  /** Connection options for this instance, e.g. through a proxy (default: the deployment's database). */
  database?: DataSourceOptions;
  /** Nest log levels the instance prints (default: errors and warnings). */
  logLevels?: WorkerConfig['logLevels'];
  /** The instance counts Clip too, with its buckets (see WorkerConfig). */
  windowed?: boolean;
}

export class ChaosDeployment {
  readonly workers: ChaosWorker[] = [];
  private readonly closers: Array<() => unknown> = [];

  private constructor(
    readonly label: string,
    readonly database: TestDatabase,
    /** The parent's own connection: creates the tables, inserts rows, reads what the database holds. */
    readonly observer: DataSource,
    /** The parent's own Redis connection, for inspecting the deployment's keys. */
    readonly redis: Redis,
    readonly prefix: string,
    /** Counter options every worker starts with (the key prefix included). */
    readonly counterDefaults: WorkerCounterOptions,
  ) {}

  static async create(
    databaseName: DatabaseName,
    label: string,
    counter: WorkerCounterOptions = {},
  ): Promise<ChaosDeployment> {
    const database = await createTestDatabase(databaseName);
    const redis = testRedis();
    const prefix = uniquePrefix(`chaos-${label}`);
    let observer: DataSource | undefined;
    try {
      observer = await openObserver(database);
    } catch (error) {
      await database.drop();
      redis.disconnect();
      throw error;
    }
    const defaults: WorkerCounterOptions = {
      redis: REDIS_URL,
      keyPrefix: prefix,
      shards: 8,
      flushEnabled: false,
      flushOnShutdown: false,
      flushLeaseMs: 1_000,
      ...counter,
    };
    return new ChaosDeployment(label, database, observer, redis, prefix, defaults);
  }

  async startWorker(options: ChaosWorkerOptions): Promise<ChaosWorker> {
    const worker = await ChaosWorker.start({
      name: options.name,
      database: options.database ?? this.database.options,
      counter: { ...this.counterDefaults, ...options.counter },
      logLevels: options.logLevels,
      windowed: options.windowed,
    });
    this.workers.push(worker);
    return worker;
  }

  /** Starts instances in parallel, as a deployment's replicas would. */
  startWorkers(names: string[], options: Omit<ChaosWorkerOptions, 'name'> = {}): Promise<ChaosWorker[]> {
    return Promise.all(names.map((name) => this.startWorker({ ...options, name })));
  }

  /** Starts increments through `options.workers`; stopped by `close()` if the test does not. */
  startLoad(options: LoadOptions): LoadGenerator {
    const load = new LoadGenerator(options).start();
    this.onClose(() => load.stop());
    return load;
  }

  /** Starts sampling the targets' database values; stopped by `close()` if the test does not. */
  startSampler(targets: CounterTarget[], intervalMs?: number): DatabaseSampler {
    const sampler = new DatabaseSampler(this.observer, targets, intervalMs).start();
    this.onClose(() => sampler.stop());
    return sampler;
  }

  /**
   * A TCP proxy in front of the database (set it to 'reset' or 'blackhole' for an outage) and the
   * connection options that go through it, with short connect timeouts so an outage fails fast.
   */
  async databaseProxy(): Promise<{ proxy: TcpProxy; options: DataSourceOptions }> {
    const direct = this.database.options as DataSourceOptions & { host: string; port: number };
    const proxy = await TcpProxy.start({ host: direct.host, port: direct.port });
    this.onClose(() => proxy.close());
    const timeouts = this.database.name === 'postgres' ? { connectTimeoutMS: 1_000 } : { connectTimeout: 1_000 };
    return { proxy, options: { ...direct, host: proxy.host, port: proxy.port, ...timeouts } as DataSourceOptions };
  }

  /** Runs `close` when the deployment is closed: after the workers are killed, before the database is dropped. */
  onClose(close: () => unknown): void {
    this.closers.push(close);
  }

  /** Number of batches the ledger holds: each one a committed transaction. */
  ledgerRows(): Promise<number> {
    return this.observer.getRepository(CounterLedgerEntry).count();
  }

  async close(): Promise<void> {
    const quietly = (step: () => unknown) =>
      Promise.resolve()
        .then(step)
        .catch(() => undefined);
    await Promise.all(this.workers.map((worker) => quietly(() => worker.destroy())));
    for (const close of this.closers.reverse()) await quietly(close);
    await quietly(() => this.observer.destroy());
    await quietly(() => this.database.drop());
    await quietly(() => deleteKeys(this.redis, this.prefix));
    this.redis.disconnect();
  }
}
