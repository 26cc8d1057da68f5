import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { DataSource, EntityMetadata } from 'typeorm';
import { COUNTER_DATA_SOURCE, COUNTER_OPTIONS, MAX_SAFE_COUNT } from './counter.constants.js';
import { MESSAGES } from './counter.messages.js';
import { CounterRegistry } from './counter.registry.js';
import type { ColumnMetadata, CounterField } from './model/counted-entity.js';
import { getCountedProperties } from './decorators/counted.decorator.js';
import { getRollingCountProperties } from './decorators/rolling-count.decorator.js';
import { InvalidCounterDefinitionError } from './exceptions/invalid-counter-definition.error.js';
import { CounterConfigurationError } from './exceptions/counter-configuration.error.js';
import type { EntityClass } from './interfaces/entity-class.interface.js';
import type { ResolvedCounterOptions } from './interfaces/resolved-counter-options.interface.js';
import type { RollingWindow } from './model/rolling-window.js';
import type { Granularity } from './model/time-bucket.js';
import { integerIdRange, type CounterDialect } from './sql/counter-dialect.js';
import { CounterLedgerEntry } from './sql/counter-ledger.entity.js';
import { CounterDatabase } from './sql/counter.database.js';
import { CounterBucket } from './sql/counter-bucket.entity.js';
import { CounterRollingSum } from './sql/counter-rolling-sum.entity.js';
import { CounterRollingWindow } from './sql/counter-rolling-window.entity.js';
import { declaredRolling } from './windows/declared-rolling.js';
import { declaredRollingCounts } from './windows/declared-rolling-counts.js';
import { declaredWindows, scriptNameOf } from './windows/declared-windows.js';
import { WINDOW_MESSAGES } from './windows/window.messages.js';

const INTEGER_TYPES = new Set([
  'int',
  'integer',
  'int2',
  'int4',
  'int8',
  'smallint',
  'mediumint',
  'tinyint',
  'bigint',
  'unsigned big int',
]);
const COUNTER_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * Walks the data source's entity metadata at bootstrap and registers every entity with `@Counted()` (or
 * `@RollingCount()`) properties, refusing declarations that could not work with a message that names the fix.
 */
@Injectable()
export class CounterEntityExplorer implements OnModuleInit {
  constructor(
    @Inject(COUNTER_DATA_SOURCE) private readonly dataSource: DataSource,
    private readonly registry: CounterRegistry,
    private readonly database: CounterDatabase,
    @Inject(COUNTER_OPTIONS) private readonly options: ResolvedCounterOptions,
  ) {}

  onModuleInit(): void {
    const { dialect } = this.database;
    if (!this.dataSource.hasMetadata(CounterLedgerEntry)) {
      throw new CounterConfigurationError(MESSAGES.ledgerMissing());
    }
    for (const metadata of this.dataSource.entityMetadatas) {
      if (typeof metadata.target !== 'function') continue;
      const declared = getCountedProperties(metadata.target).length + getRollingCountProperties(metadata.target).length;
      if (declared > 0) this.register(metadata, metadata.target as EntityClass, dialect);
    }
  }

  private register(metadata: EntityMetadata, target: EntityClass, dialect: CounterDialect): void {
    const name = target.name;
    if (metadata.primaryColumns.length !== 1) {
      throw new InvalidCounterDefinitionError(MESSAGES.badPrimaryKey(name, metadata.primaryColumns.length));
    }
    const counters: CounterField[] = [];
    for (const { propertyName, counterName, options } of getCountedProperties(target)) {
      const column = metadata.findColumnWithPropertyName(propertyName);
      if (!column) throw new InvalidCounterDefinitionError(MESSAGES.notAColumn(name, propertyName));
      const type = this.typeOf(column);
      if (!INTEGER_TYPES.has(type)) {
        throw new InvalidCounterDefinitionError(MESSAGES.notNumericColumn(name, propertyName, type));
      }
      if (!COUNTER_NAME.test(counterName)) {
        throw new InvalidCounterDefinitionError(MESSAGES.badCounterName(name, counterName));
      }
      if (counters.some((counter) => counter.name === counterName)) {
        throw new InvalidCounterDefinitionError(MESSAGES.duplicateCounter(name, counterName));
      }
      const declaredMin = options.min ?? -MAX_SAFE_COUNT;
      const declaredMax = options.max ?? MAX_SAFE_COUNT;
      // The column type bounds the counter too: a value the column cannot hold would make every later
      // batch of its shard fail in SQL, so such a change is refused when it is made.
      const [typeMin, typeMax] = dialect.integerRange(type, column.unsigned) ?? [-MAX_SAFE_COUNT, MAX_SAFE_COUNT];
      const min = Math.max(declaredMin, typeMin);
      const max = Math.min(declaredMax, typeMax);
      // min > max also catches declared bounds in the wrong order.
      if (!Number.isSafeInteger(declaredMin) || !Number.isSafeInteger(declaredMax) || min > max) {
        throw new InvalidCounterDefinitionError(MESSAGES.badBounds(name, counterName));
      }
      if (options.source !== undefined && typeof options.source !== 'function') {
        throw new InvalidCounterDefinitionError(MESSAGES.badSource(name, counterName));
      }
      const windows = declaredWindows(name, counterName, options.windows);
      if (windows.length > 0 && !this.dataSource.hasMetadata(CounterBucket)) {
        throw new CounterConfigurationError(WINDOW_MESSAGES.bucketsMissing(name, counterName));
      }
      const rolling = declaredRolling(name, counterName, options.rolling, windows);
      if (rolling.length > 0) this.checkRolling(name, counterName, rolling, windows[0]);
      const scriptName = scriptNameOf(counterName, windows);
      counters.push({
        name: counterName,
        propertyName,
        column,
        min,
        max,
        source: options.source,
        windows,
        rolling,
        scriptName,
      });
    }
    const rollingCounts = declaredRollingCounts(getRollingCountProperties(target), {
      entity: name,
      counters,
      isColumn: (propertyName) => metadata.findColumnWithPropertyName(propertyName) !== undefined,
      bucketRetentionMs: this.options.bucketRetentionMs,
    });
    const primary = metadata.primaryColumns[0];
    const primaryType = this.typeOf(primary);
    const numericId = INTEGER_TYPES.has(primaryType);
    this.registry.register({
      target,
      name,
      key: metadata.tablePath,
      metadata,
      primary,
      numericId,
      idRange: numericId ? integerIdRange(dialect, primaryType, primary.unsigned) : undefined,
      uuidId: primaryType === 'uuid' || primary.generationStrategy === 'uuid',
      idMaxLength: declaredTextLength(primaryType, primary),
      counters,
      counterNames: counters.map((counter) => counter.name),
      scriptNames: counters.map((counter) => counter.scriptName),
      rollingCounts,
    });
  }

  /**
   * Refuses rolling windows without their tables, or longer than their buckets are kept. A window as long
   * as that holds pruning back by at most a bucket (pruning keeps every bucket a window still counts).
   */
  private checkRolling(entity: string, counter: string, rolling: RollingWindow[], finest: Granularity): void {
    if (!this.dataSource.hasMetadata(CounterRollingWindow) || !this.dataSource.hasMetadata(CounterRollingSum)) {
      throw new CounterConfigurationError(WINDOW_MESSAGES.rollingTablesMissing(entity, counter));
    }
    const retentionMs = this.options.bucketRetentionMs[finest];
    const tooLong = rolling.find((window) => window.seconds * 1_000 > retentionMs);
    if (tooLong) {
      throw new CounterConfigurationError(
        WINDOW_MESSAGES.rollingBeyondRetention(entity, counter, tooLong.name, finest, retentionMs),
      );
    }
  }

  private typeOf(column: ColumnMetadata): string {
    return String(this.dataSource.driver.normalizeType(column)).toLowerCase();
  }
}

/** The length a character column declares (`varchar(64)`: 64), counted in characters; undefined for others. */
function declaredTextLength(type: string, column: ColumnMetadata): number | undefined {
  const length = Number(column.length);
  return type.includes('char') && Number.isSafeInteger(length) && length > 0 ? length : undefined;
}
