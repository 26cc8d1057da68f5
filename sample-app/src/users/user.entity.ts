import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A demo user: the page signs in as one of them, and likes are per user. */
@Entity('users')
export class User {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column({ type: 'varchar', length: 100 })
  name!: string;

  /** One of the visitors a burst simulates (see burst/burst-visitors.ts): not offered as a sign-in. */
  @Column({ type: 'boolean', default: false })
  simulated!: boolean;
}
