import { Controller, Get, Param, ParseIntPipe, Query, UseInterceptors } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In } from 'typeorm';
import { CounterInterceptor, LiveCounts } from '../../lib/index.js';
import { Article, Remark } from './entities.js';

const parseIds = (ids: string | undefined): number[] =>
  (ids ?? '')
    .split(',')
    .filter((id) => id !== '')
    .map(Number);

/** The response shapes a user's routes return, each decorated with `@LiveCounts()`. */
@Controller('live')
export class LiveCountsController {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  private get articles() {
    return this.dataSource.getRepository(Article);
  }

  /** A single entity. */
  @LiveCounts()
  @Get('articles/:id')
  one(@Param('id', ParseIntPipe) id: number): Promise<Article | null> {
    return this.articles.findOneBy({ id });
  }

  /** An array of entities. */
  @LiveCounts()
  @Get('articles')
  many(@Query('ids') ids?: string): Promise<Article[]> {
    return this.articles.find({ where: { id: In(parseIds(ids)) }, order: { id: 'ASC' } });
  }

  /** A pagination wrapper. */
  @LiveCounts()
  @Get('page')
  async page(
    @Query('title') title: string,
    @Query('page', ParseIntPipe) page: number,
    @Query('size', ParseIntPipe) size: number,
  ): Promise<{ items: Article[]; total: number; page: number }> {
    const [items, total] = await this.articles.findAndCount({
      where: { title },
      order: { id: 'ASC' },
      skip: (page - 1) * size,
      take: size,
    });
    return { items, total, page };
  }

  /** An entity with a loaded relation holding counted entities. */
  @LiveCounts()
  @Get('articles/:id/remarks')
  withRemarks(@Param('id', ParseIntPipe) id: number): Promise<Article | null> {
    return this.articles.findOne({ where: { id }, relations: { remarks: true }, order: { remarks: { id: 'ASC' } } });
  }

  /** A counted entity whose loaded relation is a counted entity too. */
  @LiveCounts()
  @Get('remarks/:id')
  remark(@Param('id') id: string): Promise<Remark | null> {
    return this.dataSource.getRepository(Remark).findOne({ where: { id }, relations: { article: true } });
  }

  /** Entities deep inside plain objects and arrays. */
  @LiveCounts()
  @Get('nested')
  async nested(@Query('ids') ids?: string) {
    const [featured, ...others] = await this.many(ids);
    return {
      data: { featured, meta: { source: 'db' } },
      sections: [{ title: 'others', entries: others.map((article) => ({ rank: article.id, article })) }],
    };
  }

  @LiveCounts()
  @Get('null')
  nothing(): null {
    return null;
  }

  @LiveCounts()
  @Get('empty')
  empty(): Article[] {
    return [];
  }

  /** Looks like an article but is not an entity instance: must be returned as is. */
  @LiveCounts()
  @Get('plain/:id')
  plain(@Param('id', ParseIntPipe) id: number) {
    return { id, title: 'not an entity', likeCount: -1, viewCount: -2, tags: ['a', 'b'], at: 42 };
  }
}

/** The interceptor applied to a whole controller with `@UseInterceptors(CounterInterceptor)`. */
@Controller('intercepted')
@UseInterceptors(CounterInterceptor)
export class InterceptedController {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  @Get('articles/:id')
  one(@Param('id', ParseIntPipe) id: number): Promise<Article | null> {
    return this.dataSource.getRepository(Article).findOneBy({ id });
  }

  @Get('articles')
  many(@Query('ids') ids?: string): Promise<Article[]> {
    return this.dataSource.getRepository(Article).find({ where: { id: In(parseIds(ids)) }, order: { id: 'ASC' } });
  }
}

export const LIVE_COUNTS_CONTROLLERS = [LiveCountsController, InterceptedController];
