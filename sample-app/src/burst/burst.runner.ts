import { ConflictException, Injectable, Logger, NotFoundException, type OnApplicationShutdown } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { setTimeout as sleep } from 'node:timers/promises';
import { CounterService } from 'nestjs-counter';
import type { Repository } from 'typeorm';
import { FlushLog } from '../flush/flush.log.js';
import { SqlStatementCounter } from '../flush/sql-statement.counter.js';
import { Like } from '../likes/like.entity.js';
import { Solution } from '../solutions/solution.entity.js';
import { BurstVisitors, VISITORS } from './burst-visitors.js';
import type { BurstTally, BurstValues } from './burst.tally.js';
import { OwnRoutesClient, type VisitorChange } from './own-routes.client.js';

/** Requests each visitor sends: views, and one like (or unlike, when it liked the solution already). */
const REQUESTS_PER_VISITOR = 20;
/** Which of them is the like. */
const LIKE_AT = 9;
/** About how long the requests take in all. */
const SPREAD_MS = 3_000;
/** How often the flushing phase compares the solution's live and SQL values. */
const POLL_MS = 200;

/**
 * Simulates a burst: 50 visitors open one solution 19 times each and like it (or unlike it) once, 1,000
 * requests over about 3 s through the app's own HTTP routes. Then it waits until the solution's live
 * values are in SQL (flushes paused: until they resume, or a flush runs from the page) and tallies what
 * the flushes wrote and sent to the database, and what SQL lacks of the changes accepted.
 */
@Injectable()
export class BurstRunner implements OnApplicationShutdown {
  private readonly logger = new Logger('Burst');
  private current: BurstTally | null = null;
  private stopping = false;

  constructor(
    private readonly visitors: BurstVisitors,
    private readonly routes: OwnRoutesClient,
    private readonly counters: CounterService,
    private readonly log: FlushLog,
    private readonly statements: SqlStatementCounter,
    @InjectRepository(Solution) private readonly solutions: Repository<Solution>,
    @InjectRepository(Like) private readonly likes: Repository<Like>,
  ) {}

  latest(): BurstTally | null {
    return this.current;
  }

  /** Starts a burst on the solution; 409 while one sends, 404 for a missing solution. */
  async start(solutionId: number): Promise<BurstTally> {
    if (this.current?.phase === 'sending') throw new ConflictException('A burst is running: wait for its tally.');
    const base = this.routes.baseUrl();
    if (!(await this.solutions.existsBy({ id: solutionId }))) {
      throw new NotFoundException(`Solution ${solutionId} does not exist.`);
    }
    const visitors = await this.visitors.ids();
    const liked = new Set(
      (await this.likes.findBy({ targetType: 'solution', targetId: solutionId })).map((like) => like.userId),
    );
    const tally = this.newTally(solutionId, await this.liveValues(solutionId));
    this.current = tally;
    void this.run(tally, base, visitors, liked).catch((error: Error) => {
      tally.refusal ??= error.message;
      tally.phase = 'done';
      this.logger.error(`The burst stopped: ${error.message}`, error.stack);
    });
    return tally;
  }

  onApplicationShutdown(): void {
    this.stopping = true;
  }

  private async run(tally: BurstTally, base: string, visitors: number[], liked: Set<number>): Promise<void> {
    const flushesBefore = this.log.read();
    const statementsBefore = this.statements.read();
    await Promise.all(visitors.map((userId) => this.visit(tally, base, userId, liked.has(userId))));
    tally.phase = 'flushing';
    while (!this.stopping) {
      const sql = await this.sqlValues(tally.solutionId);
      const live = await this.liveValues(tally.solutionId);
      const flushes = this.log.read();
      const statements = this.statements.read();
      Object.assign(tally, {
        pending: Math.abs(live.like_count - sql.like_count) + Math.abs(live.view_count - sql.view_count),
        flushes: flushes.flushes - flushesBefore.flushes,
        rowsWritten: flushes.rows - flushesBefore.rows,
        batches: flushes.batches - flushesBefore.batches,
        statements: statements.statements - statementsBefore.statements,
        updates: statements.updates - statementsBefore.updates,
        transactions: statements.transactions - statementsBefore.transactions,
      });
      if (live.like_count === sql.like_count && live.view_count === sql.view_count) {
        const expected = {
          like_count: tally.before.like_count + tally.likes,
          view_count: tally.before.view_count + tally.views,
        };
        tally.sql = sql;
        tally.lost = Math.abs(expected.like_count - sql.like_count) + Math.abs(expected.view_count - sql.view_count);
        tally.phase = 'done';
        tally.doneAt = new Date().toISOString();
        return;
      }
      await sleep(POLL_MS);
    }
  }

  /** One visitor's requests, one after another, spread over the burst. */
  private async visit(tally: BurstTally, base: string, userId: number, likes: boolean): Promise<void> {
    const pause = SPREAD_MS / REQUESTS_PER_VISITOR;
    await sleep(Math.random() * pause);
    for (let request = 0; request < REQUESTS_PER_VISITOR && !this.stopping; request++) {
      const sent =
        request === LIKE_AT
          ? this.routes.like(base, userId, tally.solutionId, !likes)
          : this.routes.view(base, userId, tally.solutionId);
      this.count(
        tally,
        await sent.catch((error: Error): VisitorChange => ({ kind: 'refused', reason: error.message })),
      );
      await sleep(pause * (0.5 + Math.random()));
    }
  }

  private count(tally: BurstTally, change: VisitorChange): void {
    tally.answered++;
    if (change.kind === 'view') {
      tally.views++;
      tally.accepted++;
    } else if (change.kind === 'like') {
      tally.likes += change.delta;
      if (change.delta !== 0) tally.accepted++;
    } else {
      tally.refused++;
      tally.refusal ??= change.reason;
    }
  }

  private async liveValues(solutionId: number): Promise<BurstValues> {
    const live = (await this.counters.getMany(Solution, [solutionId], ['like_count', 'view_count'])).get(solutionId);
    if (!live) throw new NotFoundException(`Solution ${solutionId} does not exist.`);
    return { like_count: live.like_count, view_count: live.view_count };
  }

  /** Read straight from the table: no live value overlaid. */
  private async sqlValues(solutionId: number): Promise<BurstValues> {
    const row = await this.solutions.findOneOrFail({
      where: { id: solutionId },
      select: { id: true, likeCount: true, viewCount: true },
    });
    return { like_count: Number(row.likeCount), view_count: Number(row.viewCount) };
  }

  private newTally(solutionId: number, before: BurstValues): BurstTally {
    return {
      solutionId,
      phase: 'sending',
      startedAt: new Date().toISOString(),
      doneAt: null,
      visitors: VISITORS,
      requests: VISITORS * REQUESTS_PER_VISITOR,
      answered: 0,
      accepted: 0,
      views: 0,
      likes: 0,
      refused: 0,
      refusal: null,
      before,
      pending: null,
      flushes: 0,
      rowsWritten: 0,
      batches: 0,
      statements: 0,
      updates: 0,
      transactions: 0,
      sql: null,
      lost: null,
    };
  }
}
