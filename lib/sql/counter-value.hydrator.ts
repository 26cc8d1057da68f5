import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { COUNTER_DATA_SOURCE } from '../counter.constants.js';
import { MESSAGES } from '../counter.messages.js';
import { CounterRegistry } from '../counter.registry.js';
import type { CounterField } from '../model/counted-entity.js';
import { CounterDatabase } from './counter.database.js';

/** The count a probe asks the database for: any small one each integer type holds. */
const PROBE_COUNT = 7;

/** After a failed probe, how long counts are written as numbers before the database is asked again. */
const PROBE_RETRY_MS = 60_000;

/** A count as the driver returns a value of the column: text, a number or a bigint. */
type DriverValue = (count: number) => unknown;

const asNumber: DriverValue = (count) => count;

/**
 * Turns live counts into the values TypeORM gives an entity's counted properties, so that the overlay
 * writes the type a property has when Redis is down too: the driver's type for the column (pg and
 * mysql2 give a `bigint` as text by default), then TypeORM's hydration and the column's transformer.
 * The driver's type is asked of the database once per column type, at bootstrap.
 */
@Injectable()
export class CounterValueHydrator implements OnApplicationBootstrap {
  private readonly logger = new Logger('CounterValueHydrator');
  private readonly driverValues = new Map<CounterField, DriverValue>();
  private nextProbeAt = 0;

  constructor(
    @Inject(COUNTER_DATA_SOURCE) private readonly dataSource: DataSource,
    private readonly registry: CounterRegistry,
    private readonly database: CounterDatabase,
  ) {}

  onApplicationBootstrap(): Promise<void> {
    return this.probe();
  }

  /** `count` as TypeORM hydrates the column's values into the counter's property. */
  hydrate(field: CounterField, count: number): unknown {
    const driverValue = this.driverValues.get(field);
    if (!driverValue) {
      if (Date.now() >= this.nextProbeAt) void this.probe();
      return count;
    }
    return this.dataSource.driver.prepareHydratedValue(driverValue(count), field.column);
  }

  private async probe(): Promise<void> {
    this.nextProbeAt = Date.now() + PROBE_RETRY_MS;
    const probes = new Map<string, Promise<DriverValue>>();
    try {
      for (const field of this.registry.all().flatMap((entity) => entity.counters)) {
        const { column } = field;
        const type = String(this.dataSource.driver.normalizeType(column)).toLowerCase();
        const key = `${type} ${column.unsigned}`;
        if (!probes.has(key)) probes.set(key, this.driverValueOf(type, column.unsigned));
        this.driverValues.set(field, await probes.get(key)!);
      }
    } catch (error) {
      this.logger.warn(MESSAGES.valueTypesUnknown((error as Error).message));
    }
  }

  private async driverValueOf(type: string, unsigned: boolean): Promise<DriverValue> {
    const rows: Array<{ probe: unknown }> = await this.dataSource.query(
      this.database.dialect.typedValue(PROBE_COUNT, type, unsigned),
    );
    const sample = rows[0]?.probe;
    if (typeof sample === 'string') return String;
    if (typeof sample === 'bigint') return BigInt;
    return asNumber;
  }
}
