import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { Comment } from '../comments/comment.entity.js';
import { Problem } from '../problems/problem.entity.js';
import { Solution } from '../solutions/solution.entity.js';
import { User } from '../users/user.entity.js';
import { countComments, DEMO_PROBLEMS, DEMO_USERS, type DemoComment } from './demo-data.fixtures.js';
import { StaleCountersCleaner } from './stale-counters.cleaner.js';

/**
 * Writes the demo rows when the problems table is empty. Runs before the counter flush starts, and
 * writes counter columns directly: allowed only because none of these rows is in Redis yet.
 */
@Injectable()
export class DemoDataSeeder implements OnModuleInit {
  private readonly logger = new Logger('DemoData');

  constructor(
    private readonly dataSource: DataSource,
    private readonly staleCounters: StaleCountersCleaner,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.seedUsers();
    if ((await this.dataSource.getRepository(Problem).count()) > 0) return;
    await this.staleCounters.clear();
    const users = await this.dataSource.getRepository(User).find({ where: { simulated: false } });
    const authors = new Map(users.map((user) => [user.name, user.id]));
    await this.dataSource.transaction((manager) => this.seed(manager, authors));
    this.logger.log(`Created ${DEMO_PROBLEMS.length} demo problems with their solutions and comments.`);
  }

  /** Apart from the problems, so that a database made before users existed gets them too. */
  private async seedUsers(): Promise<void> {
    const users = this.dataSource.getRepository(User);
    if ((await users.count()) > 0) return;
    await users.save(DEMO_USERS.map((name) => users.create({ name })));
    this.logger.log(`Created ${DEMO_USERS.length} demo users: ${DEMO_USERS.join(', ')}.`);
  }

  /** `authors`: user ids by name. */
  private async seed(manager: EntityManager, authors: Map<string, number>): Promise<void> {
    for (const demo of DEMO_PROBLEMS) {
      const problem = await manager.save(
        manager.create(Problem, {
          title: demo.title,
          statement: demo.statement,
          submissionCount: demo.submissions,
          passedCount: demo.passed,
          solutionCount: demo.solutions.length,
        }),
      );
      for (const solution of demo.solutions) {
        const saved = await manager.save(
          manager.create(Solution, {
            problemId: problem.id,
            title: solution.title,
            content: solution.content,
            viewCount: solution.views,
            likeCount: solution.likes,
            commentCount: countComments(solution.comments),
          }),
        );
        await this.seedComments(manager, authors, saved.id, null, solution.comments);
      }
    }
  }

  private async seedComments(
    manager: EntityManager,
    authors: Map<string, number>,
    solutionId: number,
    parentId: number | null,
    comments: DemoComment[],
  ) {
    for (const comment of comments) {
      const saved = await manager.save(
        manager.create(Comment, {
          solutionId,
          parentId,
          content: comment.content,
          authorId: authors.get(comment.author) ?? null,
          likeCount: comment.likes,
          replyCount: comment.replies?.length ?? 0,
        }),
      );
      await this.seedComments(manager, authors, solutionId, saved.id, comment.replies ?? []);
    }
  }
}
