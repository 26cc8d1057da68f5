import type { DataSource, EntityManager } from 'typeorm';
import type { CountedEntity } from '../model/counted-entity.js';
import type { CounterDialect } from './counter-dialect.js';
import { onPrimary } from './on-primary.js';

/**
 * An entity's primary keys, as the database returns them: a page of a walk, or a random sample. Read
 * from the primary: a replica behind it would leave out the rows inserted last.
 */
export class CountedRowsQuery {
  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: CounterDialect,
  ) {}

  /** Up to `limit` primary keys in key order, those after `after` (keyset pagination: no OFFSET to skip). */
  idsAfter(entity: CountedEntity, after: string | number | undefined, limit: number): Promise<Array<string | number>> {
    const key = `row.${entity.primary.propertyName}`;
    return this.read((manager) => {
      const query = this.ids(manager, entity).orderBy(key, 'ASC').limit(limit);
      return after === undefined ? query : query.where(`${key} > :after`, { after });
    });
  }

  /** Up to `size` primary keys picked at random. */
  sample(entity: CountedEntity, size: number): Promise<Array<string | number>> {
    return this.read((manager) => this.ids(manager, entity).orderBy(this.dialect.random).limit(size));
  }

  private ids(manager: EntityManager, entity: CountedEntity) {
    return manager
      .getRepository(entity.target)
      .createQueryBuilder('row')
      .select(`row.${entity.primary.propertyName}`, 'id')
      .withDeleted();
  }

  private async read(
    build: (manager: EntityManager) => ReturnType<CountedRowsQuery['ids']>,
  ): Promise<Array<string | number>> {
    const rows = await onPrimary(this.dataSource, (manager) => build(manager).getRawMany<{ id: string | number }>());
    return rows.map((row) => row.id);
  }
}
