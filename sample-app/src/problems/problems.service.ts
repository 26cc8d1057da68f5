import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { pageWindow, toPage, type Page, type PageRequest } from '../common/page.interface.js';
import { Problem } from './problem.entity.js';

/** Reads problems. Counter values come from the database; `@LiveCounts()` routes overlay live ones. */
@Injectable()
export class ProblemsService {
  constructor(@InjectRepository(Problem) private readonly problems: Repository<Problem>) {}

  async list(request: PageRequest): Promise<Page<Problem>> {
    const found = await this.problems.findAndCount({
      order: { id: 'ASC' },
      ...pageWindow(request),
    });
    return toPage(found, request);
  }

  async findWithSolutions(id: number): Promise<Problem> {
    const problem = await this.problems.findOne({
      where: { id },
      relations: { solutions: true },
      order: { solutions: { id: 'ASC' } },
    });
    if (!problem) throw new NotFoundException(`Problem ${id} does not exist.`);
    return problem;
  }
}
