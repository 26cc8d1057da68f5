import { Body, Controller, Delete, Get, NotFoundException, Param, Post } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { CounterService, LiveCounts } from 'nestjs-counter';
import type { Repository } from 'typeorm';
import { Article } from './article.entity.js';

@Controller('articles')
export class ArticlesController {
  constructor(
    private readonly counters: CounterService,
    @InjectRepository(Article) private readonly articles: Repository<Article>,
  ) {}

  @Post()
  create(@Body() body: { title: string }) {
    return this.articles.save(this.articles.create({ title: body.title }));
  }

  @Get(':id')
  @LiveCounts()
  async findOne(@Param('id') id: string) {
    const article = await this.articles.findOneBy({ id: Number(id) });
    if (!article) throw new NotFoundException();
    return article;
  }

  @Post(':id/like')
  async like(@Param('id') id: string) {
    return { likeCount: await this.counters.increment(Article, id, 'like_count') };
  }

  @Delete(':id/like')
  async unlike(@Param('id') id: string) {
    return { likeCount: await this.counters.decrement(Article, id, 'like_count') };
  }

  @Post('flush')
  flush() {
    return this.counters.flush();
  }
}
