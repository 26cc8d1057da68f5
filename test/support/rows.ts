import type { DataSource } from 'typeorm';
import { Article, Remark } from './entities.js';

/** Inserts articles with the given like counts; returns their ids in order. */
export async function insertArticles(dataSource: DataSource, likeCounts: number[], viewCount = 0): Promise<number[]> {
  const saved = await dataSource
    .getRepository(Article)
    .save(likeCounts.map((likeCount, i) => ({ title: `article ${i}`, likeCount, viewCount })), { chunk: 100 });
  return saved.map((article) => article.id);
}

export async function insertRemarks(dataSource: DataSource, replyCounts: number[], idPrefix: string): Promise<string[]> {
  const rows = replyCounts.map((replyCount, i) => ({ id: `${idPrefix}:{${i}}`, replyCount }));
  await dataSource.getRepository(Remark).save(rows, { chunk: 100 });
  return rows.map((row) => row.id);
}

/** Database values, read with plain SQL through the entity metadata (no counter module involved). */
export async function articleCounts(dataSource: DataSource, ids: number[]): Promise<Map<number, { likes: number; views: number }>> {
  const rows = await dataSource.getRepository(Article).findBy(ids.map((id) => ({ id })));
  return new Map(rows.map((row) => [row.id, { likes: Number(row.likeCount), views: Number(row.viewCount) }]));
}

export async function remarkCounts(dataSource: DataSource, ids: string[]): Promise<Map<string, number>> {
  const rows = await dataSource.getRepository(Remark).findBy(ids.map((id) => ({ id })));
  return new Map(rows.map((row) => [row.id, Number(row.replyCount)]));
}
