import type { DataSource } from 'typeorm';
import type { CountedEntity } from '../counter.registry.js';
import type { CounterDialect } from './counter-dialect.js';

/** An entity's primary keys, as the database returns them: a page of a walk, or a random sample. */
export class CountedRowsQuery {
  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: CounterDialect,
  ) {}

  /** Up to `limit` primary keys in key order, those after `after` (keyset pagination: no OFFSET to skip). */
  idsAfter(entity: CountedEntity, after: string | number | undefined, limit: number): Promise<Array<string | number>> {
    const key = `row.${entity.primary.propertyName}`;
    const query = this.ids(entity).orderBy(key, 'ASC').limit(limit);
    if (after !== undefined) query.where(`${key} > :after`, { after });
    return this.read(query);
  }

  /** Up to `size` primary keys picked at random. */
  sample(entity: CountedEntity, size: number): Promise<Array<string | number>> {
    return this.read(this.ids(entity).orderBy(this.dialect.random).limit(size));
  }

  private ids(entity: CountedEntity) {
    return this.dataSource
      .getRepository(entity.target)
      .createQueryBuilder('row')
      .select(`row.${entity.primary.propertyName}`, 'id')
      .withDeleted();
  }

  private async read(query: ReturnType<CountedRowsQuery['ids']>): Promise<Array<string | number>> {
    const rows = await query.getRawMany<{ id: string | number }>();
    return rows.map((row) => row.id);
  }
}
