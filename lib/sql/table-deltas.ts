import { In, type DataSource, type QueryRunner } from 'typeorm';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import type { DeltaRows } from '../model/delta-batch.js';
import { canonicalIdText } from '../model/row-id.js';
import { quotedTablePath, type CounterDialect } from './counter-dialect.js';

/**
 * Adds a transaction's deltas to one entity's table, in statements of at most the dialect's row limit;
 * returns the rows (positions in `rows`) that matched none in the table: deleted since their counters
 * changed.
 */
export async function addTableDeltas(
  dataSource: DataSource,
  runner: QueryRunner,
  dialect: CounterDialect,
  entity: CountedEntity,
  counters: CounterField[],
  rows: DeltaRows,
): Promise<number[]> {
  const driver = dataSource.driver;
  const target = {
    table: quotedTablePath(driver, entity.metadata.tablePath),
    idColumn: driver.escape(entity.primary.databaseName),
    idType: String(driver.normalizeType(entity.primary)),
    columns: counters.map((counter) => driver.escape(counter.column.databaseName)),
    nullable: counters.map((counter) => counter.column.isNullable),
  };
  const perStatement = dialect.maxRowsPerStatement(counters.length);
  const missing: number[] = [];
  for (let from = 0; from < rows.ids.length; from += perStatement) {
    const to = Math.min(rows.ids.length, from + perStatement);
    const statement = dialect.addDeltas(target, rows, from, to);
    const { affected } = await runner.query(statement.sql, statement.params, true);
    if ((affected ?? 0) < to - from) missing.push(...(await missingRows(runner, entity, rows.ids, from, to)));
  }
  return missing;
}

/** Rows `from` to `to` (exclusive) whose id matches no row. */
async function missingRows(
  runner: QueryRunner,
  entity: CountedEntity,
  ids: Array<string | number>,
  from: number,
  to: number,
): Promise<number[]> {
  const existing = await runner.manager.getRepository(entity.target).find({
    select: { [entity.primary.propertyName]: true },
    where: { [entity.primary.propertyName]: In(ids.slice(from, to)) },
    withDeleted: true,
    loadEagerRelations: false,
  });
  const canonical = (id: unknown) => canonicalIdText(entity, id);
  const present = new Set(
    existing.map((row) => canonical((row as Record<string, unknown>)[entity.primary.propertyName])),
  );
  const missing: number[] = [];
  for (let row = from; row < to; row++) if (!present.has(canonical(ids[row]))) missing.push(row);
  return missing;
}
