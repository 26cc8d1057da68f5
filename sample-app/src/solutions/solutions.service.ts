import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { CounterService, type CounterBucketValue } from 'nestjs-counter';
import { In, type Repository } from 'typeorm';
import { pageWindow, toPage, type Page, type PageRequest } from '../common/page.interface.js';
import { Problem } from '../problems/problem.entity.js';
import { Solution } from './solution.entity.js';

/** How many hours `viewsPerHour` gives: the current one and those before it. */
const HOURS_SHOWN = 24;

/** How many solutions `trending` gives. */
const TRENDING_SHOWN = 5;

const HOUR_MS = 3_600_000;

/** A solution of "Trending today": `likes` is the net change of its likes over the last 24 hours. */
export interface TrendingSolution {
  id: number;
  title: string;
  likes: number;
}

/** Lists, views and creates solutions; every counter change goes through CounterService. */
@Injectable()
export class SolutionsService {
  constructor(
    @InjectRepository(Solution) private readonly solutions: Repository<Solution>,
    @InjectRepository(Problem) private readonly problems: Repository<Problem>,
    private readonly counters: CounterService,
  ) {}

  async list(request: PageRequest, problemId?: number): Promise<Page<Solution>> {
    const found = await this.solutions.findAndCount({
      where: problemId === undefined ? {} : { problemId },
      order: { id: 'ASC' },
      ...pageWindow(request),
    });
    return toPage(found, request);
  }

  /** Counts a view (404 for a missing solution) and returns the solution. */
  async view(id: number): Promise<Solution> {
    await this.counters.increment(Solution, id, 'view_count');
    const solution = await this.solutions.findOneBy({ id });
    if (!solution) throw new NotFoundException(`Solution ${id} does not exist.`);
    return solution;
  }

  /**
   * Views per hour (UTC), live, oldest first: the current hour and the 23 before it, whole, so always 24
   * buckets (a window ending now would end inside an hour, and begin in one: 25). 404 for a missing
   * solution, which `series` does not check.
   */
  async viewsPerHour(id: number): Promise<CounterBucketValue[]> {
    if (!(await this.solutions.existsBy({ id }))) throw new NotFoundException(`Solution ${id} does not exist.`);
    const nextHour = (Math.floor(Date.now() / HOUR_MS) + 1) * HOUR_MS;
    return this.counters.series(Solution, id, 'view_count', {
      granularity: 'hour',
      since: nextHour - HOURS_SHOWN * HOUR_MS,
      until: nextHour,
    });
  }

  /**
   * The solutions liked most over the last 24 hours, most first (ties by id), live: the sums the flush
   * keeps for `like_count`'s rolling window plus the likes waiting in Redis, with the titles from the table.
   */
  async trending(): Promise<TrendingSolution[]> {
    const top = await this.counters.top(Solution, 'like_count', {
      since: Date.now() - 24 * HOUR_MS,
      limit: TRENDING_SHOWN,
    });
    if (top.length === 0) return [];
    const solutions = await this.solutions.find({
      select: { id: true, title: true },
      where: { id: In(top.map((row) => Number(row.id))) },
    });
    const titles = new Map(solutions.map((solution) => [solution.id, solution.title]));
    // A solution deleted since its likes were flushed has no title left to show.
    return top.flatMap(({ id, value }) => {
      const title = titles.get(Number(id));
      return title === undefined ? [] : [{ id: Number(id), title, likes: value }];
    });
  }

  /** Creates a solution and counts it on its problem; the row is removed again if counting fails. */
  async create(problemId: number, title: string, content: string): Promise<Solution> {
    if (!(await this.problems.existsBy({ id: problemId }))) {
      throw new NotFoundException(`Problem ${problemId} does not exist.`);
    }
    const solution = await this.solutions.save(this.solutions.create({ problemId, title, content }));
    try {
      await this.counters.increment(Problem, problemId, 'solution_count');
    } catch (error) {
      await this.solutions.delete(solution.id);
      throw error;
    }
    return solution;
  }
}
