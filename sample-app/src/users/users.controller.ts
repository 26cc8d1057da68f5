import { Controller, Get } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { User } from './user.entity.js';

@Controller('users')
export class UsersController {
  constructor(@InjectRepository(User) private readonly users: Repository<User>) {}

  /** GET /users: the demo users one can sign in as (send `X-User-Id`). */
  @Get()
  list(): Promise<User[]> {
    return this.users.find({ order: { id: 'ASC' } });
  }
}
