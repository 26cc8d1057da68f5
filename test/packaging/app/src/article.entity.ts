import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { Counted } from 'nestjs-counter';

@Entity()
export class Article {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('varchar', { length: 200 })
  title!: string;

  @Counted('like_count', { min: 0 })
  @Column('int', { default: 0 })
  likeCount!: number;
}
