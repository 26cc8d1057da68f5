import { Injectable, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { CounterService } from 'nestjs-counter';
import type { Repository } from 'typeorm';
import { pageWindow, toPage, type Page, type PageRequest } from '../common/page.interface.js';
import { Solution } from '../solutions/solution.entity.js';
import { notSignedIn } from '../users/signed-in-user.decorator.js';
import { User } from '../users/user.entity.js';
import { Comment } from './comment.entity.js';

/** Lists and creates comments; every counter change goes through CounterService. */
@Injectable()
export class CommentsService {
  constructor(
    @InjectRepository(Comment) private readonly comments: Repository<Comment>,
    @InjectRepository(Solution) private readonly solutions: Repository<Solution>,
    @InjectRepository(User) private readonly users: Repository<User>,
    private readonly counters: CounterService,
  ) {}

  async list(request: PageRequest, solutionId?: number): Promise<Page<Comment>> {
    const found = await this.comments.findAndCount({
      where: solutionId === undefined ? {} : { solutionId },
      order: { id: 'ASC' },
      ...pageWindow(request),
    });
    return toPage(found, request);
  }

  /**
   * Creates a comment (a reply when `parentId` names a comment of the same solution) and counts it on
   * the solution and the parent. If counting fails, the counts made are undone and the row removed.
   * `authorId`, when given, must name a user (401 otherwise).
   */
  async create(solutionId: number, content: string, parentId?: number, authorId?: number): Promise<Comment> {
    if (authorId !== undefined && !(await this.users.existsBy({ id: authorId }))) {
      throw new UnauthorizedException(notSignedIn());
    }
    if (!(await this.solutions.existsBy({ id: solutionId }))) {
      throw new NotFoundException(`Solution ${solutionId} does not exist.`);
    }
    if (parentId !== undefined && !(await this.comments.existsBy({ id: parentId, solutionId }))) {
      throw new NotFoundException(`Comment ${parentId} does not exist on solution ${solutionId}.`);
    }
    const comment = await this.comments.save(
      this.comments.create({ solutionId, parentId: parentId ?? null, content, authorId: authorId ?? null }),
    );
    let counted = false;
    try {
      await this.counters.increment(Solution, solutionId, 'comment_count');
      counted = true;
      if (parentId !== undefined) await this.counters.increment(Comment, parentId, 'reply_count');
    } catch (error) {
      if (counted) await this.counters.decrement(Solution, solutionId, 'comment_count').catch(() => undefined);
      await this.comments.delete(comment.id);
      throw error;
    }
    return comment;
  }
}
