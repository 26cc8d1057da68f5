import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ConfigService } from '@nestjs/config';
import type { TypeOrmModuleOptions } from '@nestjs/typeorm';
import { CounterBucket, CounterLedgerEntry, CounterRollingSum, CounterRollingWindow } from 'nestjs-counter';
import { Comment } from '../comments/comment.entity.js';
import { Like } from '../likes/like.entity.js';
import { Problem } from '../problems/problem.entity.js';
import { Submission } from '../problems/submission.entity.js';
import { Solution } from '../solutions/solution.entity.js';
import { User } from '../users/user.entity.js';
import { databaseTarget } from './database.target.js';

const ENTITIES = [
  Problem,
  Submission,
  Solution,
  Comment,
  User,
  Like,
  CounterLedgerEntry,
  CounterBucket,
  CounterRollingWindow,
  CounterRollingSum,
];

/** TypeORM options from DATABASE_URL (SQLite file when unset). `synchronize` is for the demo only. */
export function databaseOptions(config: ConfigService): TypeOrmModuleOptions {
  const target = databaseTarget(config.get<string>('DATABASE_URL'));
  const common = { entities: ENTITIES, synchronize: true, retryAttempts: 2, retryDelay: 1000 };
  switch (target.kind) {
    case 'sqlite':
      mkdirSync(dirname(target.file), { recursive: true });
      return { ...common, type: 'better-sqlite3', database: target.file, enableWAL: true, timeout: 10_000 };
    case 'postgres':
      return { ...common, type: 'postgres', url: target.url };
    case 'mariadb':
      return { ...common, type: 'mariadb', url: target.url };
  }
}
