import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { DataSource, EntityMetadata } from 'typeorm';
import { COUNTER_DATA_SOURCE } from '../counter.constants.js';
import { CounterRegistry } from '../counter.registry.js';
import { CounterConfigurationError } from '../exceptions/counter-configuration.error.js';
import { WINDOW_MESSAGES } from '../windows/window.messages.js';
import { CounterBucket } from './counter-bucket.entity.js';
import { CounterRollingSum } from './counter-rolling-sum.entity.js';

/** A collation that tells apart any two strings of different characters (`utf8mb4_bin`). */
const BINARY_COLLATION = /_bin$/;

/** A text column and its collation, as information_schema.COLUMNS gives them. */
interface ColumnCollation {
  table: string;
  column: string;
  collation: string;
}

/**
 * On MySQL and MariaDB a text column compares by its collation, which is the database's default unless
 * declared, usually one that ignores case (utf8mb4_general_ci). CounterBucket and CounterRollingSum key
 * rows by their id as text (`row_id`): an entity whose string key tells apart ids that `row_id` does not
 * ('abc' and 'ABC' under utf8mb4_bin) would have two rows share buckets and sums. Such a pair is refused
 * at bootstrap, naming the statement that fixes the table. A database not reachable then, or tables not
 * made yet, are not checked.
 */
@Injectable()
export class RowIdCollationCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger('CounterDatabase');

  constructor(
    private readonly registry: CounterRegistry,
    @Inject(COUNTER_DATA_SOURCE) private readonly dataSource: DataSource,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const problems = await this.problems().catch((error: Error) => {
      this.logger.warn(WINDOW_MESSAGES.rowIdCollationUnread(error.message));
      return [];
    });
    if (problems.length > 0) throw new CounterConfigurationError(problems.join(' '));
  }

  /** One sentence per table that would merge the rows of an entity; empty when none would. */
  async problems(): Promise<string[]> {
    const type = String(this.dataSource.options.type);
    if (type !== 'mysql' && type !== 'mariadb') return [];
    const entities = this.registry.all().filter((entity) => entity.counters.some((field) => field.windows.length > 0));
    const ours = [CounterBucket, CounterRollingSum]
      .filter((table) => this.dataSource.hasMetadata(table))
      .map((table) => this.dataSource.getMetadata(table));
    if (entities.length === 0 || ours.length === 0) return [];
    const tables = [...ours, ...entities.map((entity) => entity.metadata)];
    const rows: ColumnCollation[] = await this.dataSource.query(
      'SELECT TABLE_NAME AS `table`, COLUMN_NAME AS `column`, COLLATION_NAME AS collation ' +
        'FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND COLLATION_NAME IS NOT NULL ' +
        `AND TABLE_NAME IN (${tables.map(() => '?').join(', ')})`,
      tables.map((metadata) => metadata.tableName),
    );
    const collationOf = (metadata: EntityMetadata, column: string) =>
      rows.find((row) => row.table === metadata.tableName && row.column === column)?.collation;
    const problems: string[] = [];
    for (const table of ours) {
      const rowId = table.findColumnWithPropertyName('rowId')!.databaseName;
      const ourCollation = collationOf(table, rowId);
      if (!ourCollation || BINARY_COLLATION.test(ourCollation)) continue;
      for (const entity of entities) {
        const theirs = collationOf(entity.metadata, entity.primary.databaseName);
        if (!theirs || theirs === ourCollation) continue;
        problems.push(
          WINDOW_MESSAGES.rowIdCollation(entity.name, theirs, table.tableName, rowId, ourCollation, table.name),
        );
      }
    }
    return problems;
  }
}
