import { Controller, Get } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { User } from './user.entity.js';

@Controller('users')
export class UsersController {
  constructor(@InjectRepository(User) private readonly users: Repository<User>) {}

  /** GET /users: the demo users one can sign in as (send `X-User-Id`), not the simulated visitors. */
  @Get()
  list(): Promise<Pick<User, 'id' | 'name'>[]> {
    return this.users.find({ select: { id: true, name: true }, where: { simulated: false }, order: { id: 'ASC' } });
  }
}
