import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { Counted } from '../../lib/index.js';

/** `@Counted()` on a varchar column. */
@Entity('test_invalid_varchar_counter')
export class VarcharCounter {
  @PrimaryGeneratedColumn()
  id!: number;

  @Counted('score')
  @Column({ name: 'score', type: 'varchar', length: 20, default: '0' })
  score!: string;
}

/** `@Counted()` on a property that is not a column. */
@Entity('test_invalid_not_a_column')
export class NotAColumnCounter {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'title', type: 'varchar', length: 20, default: '' })
  title!: string;

  @Counted('ghost_count')
  ghostCount!: number;
}

/** Two properties counted under one name. */
@Entity('test_invalid_duplicate_counter')
export class DuplicateCounter {
  @PrimaryGeneratedColumn()
  id!: number;

  @Counted('hits')
  @Column({ name: 'hits', type: 'int', default: 0 })
  hits!: number;

  @Counted('hits')
  @Column({ name: 'more_hits', type: 'int', default: 0 })
  moreHits!: number;
}

/** A counted entity with a composite primary key. */
@Entity('test_invalid_composite_key')
export class CompositeKeyCounter {
  @PrimaryColumn({ name: 'tenant', type: 'int' })
  tenant!: number;

  @PrimaryColumn({ name: 'slug', type: 'varchar', length: 40 })
  slug!: string;

  @Counted('visits')
  @Column({ name: 'visits', type: 'int', default: 0 })
  visits!: number;
}
