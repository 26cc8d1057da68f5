import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions, type EntitySchema } from 'typeorm';

type EntityTarget = (abstract new (...args: never[]) => unknown) | EntitySchema;

export interface HarnessAppOptions {
  database: DataSourceOptions;
  /** The entities of the application's TypeORM data source. */
  entities: EntityTarget[];
  /** Create missing tables. @default true */
  synchronize?: boolean;
  /** The application's other modules (the counter module among them), after `TypeOrmModule`. */
  imports?: NonNullable<ModuleMetadata['imports']>;
  controllers?: NonNullable<ModuleMetadata['controllers']>;
  providers?: NonNullable<ModuleMetadata['providers']>;
}

/**
 * Builds Nest applications as a user would (`TypeOrmModule` plus the modules a test names) and keeps
 * hold of every data source and application it made, so that a bootstrap that fails half way (the
 * point of several tests) leaves no connection open. The data source is initialised before Nest
 * starts and handed to `TypeOrmModule` through `dataSourceFactory`, so it is never created late by
 * a provider that was still resolving when the bootstrap failed.
 */
export class NestHarness {
  private readonly dataSources = new Set<DataSource>();
  private readonly apps = new Set<INestApplication>();

  /** Compiles and initialises an application; on failure closes what was made and rethrows. */
  async start(options: HarnessAppOptions): Promise<INestApplication> {
    const dataSource = new DataSource({
      ...options.database,
      entities: options.entities,
      synchronize: options.synchronize ?? true,
      logging: false,
    } as DataSourceOptions);
    await dataSource.initialize();
    this.dataSources.add(dataSource);
    let app: INestApplication | undefined;
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [
          TypeOrmModule.forRootAsync({
            useFactory: () => ({ ...options.database, entities: options.entities, retryAttempts: 0 }),
            dataSourceFactory: async () => dataSource,
          }),
          ...(options.imports ?? []),
        ],
        controllers: options.controllers ?? [],
        providers: options.providers ?? [],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      this.apps.add(app);
      await app.init();
      return app;
    } catch (error) {
      if (app) await this.close(app).catch(() => undefined);
      await this.destroy(dataSource);
      throw error;
    }
  }

  async close(app: INestApplication): Promise<void> {
    this.apps.delete(app);
    await app.close();
  }

  /** Closes every application still open and every data source still connected. */
  async closeAll(): Promise<void> {
    for (const app of [...this.apps]) await this.close(app).catch(() => undefined);
    for (const dataSource of [...this.dataSources]) await this.destroy(dataSource);
  }

  private async destroy(dataSource: DataSource): Promise<void> {
    this.dataSources.delete(dataSource);
    if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
  }
}
