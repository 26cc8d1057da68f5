import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A TypeORM entity with a numeric column but no `@Counted()`: the counter module must refuse it. */
@Entity('test_uncounted_tag')
export class UncountedTag {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ name: 'uses', type: 'int', default: 0 })
  uses!: number;
}
