import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { User } from '../users/user.entity.js';

/** Visitors a burst simulates. */
export const VISITORS = 50;

const nameOf = (index: number) => `Visitor ${String(index + 1).padStart(2, '0')}`;

/** The burst's visitors: users of their own (likes are per user), made on the first burst. */
@Injectable()
export class BurstVisitors {
  constructor(@InjectRepository(User) private readonly users: Repository<User>) {}

  /** Their user ids, making the ones missing. */
  async ids(): Promise<number[]> {
    const existing = await this.users.find({ where: { simulated: true }, order: { id: 'ASC' }, take: VISITORS });
    const missing = Array.from({ length: VISITORS - existing.length }, (_, index) =>
      this.users.create({ name: nameOf(existing.length + index), simulated: true }),
    );
    const made = missing.length === 0 ? [] : await this.users.save(missing);
    return [...existing, ...made].map((user) => user.id);
  }
}
