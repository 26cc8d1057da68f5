import type { CounterSource } from 'nestjs-counter';
import type { EntityTarget, ObjectLiteral } from 'typeorm';

/** A filter of the rows counted: SQL on the alias `row`, and its parameters. */
interface RowFilter {
  sql: string;
  params: ObjectLiteral;
}

/**
 * A counter's source (`@Counted({ source })`): how many rows of `entity` have each id in `column` (a
 * property), `COUNT(*) … GROUP BY`. The entity is named lazily: entity files import one another.
 */
export function countRows(
  entity: () => EntityTarget<ObjectLiteral>,
  column: string,
  filter?: RowFilter,
): CounterSource {
  return async (ids, manager) => {
    const query = manager
      .getRepository(entity())
      .createQueryBuilder('row')
      .select(`row.${column}`, 'id')
      .addSelect('COUNT(*)', 'value')
      .where(`row.${column} IN (:...ids)`, { ids })
      .groupBy(`row.${column}`);
    if (filter) query.andWhere(filter.sql, filter.params);
    const rows = await query.getRawMany<{ id: number | string; value: number | string }>();
    return rows.map((row) => [row.id, row.value] as const);
  };
}
