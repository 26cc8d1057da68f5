import type { DataSource } from 'typeorm';
import type { CounterKeys } from '../lib/redis/counter.keys.js';
import { Article, Remark } from '../test/fixtures/entities.js';

/**
 * Inserts articles with the given like counts; returns their ids in order. Their ids are generated,
 * one after another, so they share a shard or two (a shard takes runs of 100 integer ids); pass `ids`
 * (from `spreadIds`) for rows that spread over the shards.
 */
export async function insertArticles(
  dataSource: DataSource,
  likeCounts: number[],
  viewCount = 0,
  ids?: number[],
): Promise<number[]> {
  if (ids)
    return insertArticleRows(
      dataSource,
      ids.map((id, i) => ({ id, likeCount: likeCounts[i], viewCount })),
    );
  const saved = await dataSource.getRepository(Article).save(
    likeCounts.map((likeCount, i) => ({ title: `article ${i}`, likeCount, viewCount })),
    { chunk: 100 },
  );
  return saved.map((article) => article.id);
}

/** Runs of 100 ids that `spreadIds` has not given yet: from id 100,000,000 on, beyond any generated id here. */
let nextRun = 1_000_000;

/**
 * `count` ids that spread over the shards of `keys` as unrelated rows do: each in a run of 100 ids of
 * its own, every shard taken before any is taken twice. Each call gives ids of runs no other call gives.
 */
export function spreadIds(keys: CounterKeys, count: number): number[] {
  const perShard = Math.ceil(count / keys.shards);
  const byShard = Array.from({ length: keys.shards }, (): number[] => []);
  for (let run = nextRun; byShard.some((ids) => ids.length < perShard); run++) {
    const id = run * 100 + 1;
    const ids = byShard[keys.shardOf(String(id))];
    if (ids.length < perShard) ids.push(id);
  }
  nextRun += 100_000;
  return Array.from({ length: count }, (_, i) => byShard[i % keys.shards][Math.floor(i / keys.shards)]);
}

export interface ArticleRow {
  id: number;
  likeCount: number;
  viewCount?: number;
  title?: string;
}

/** Inserts articles with the ids given, in plain SQL: TypeORM leaves a generated id out of an insert on PostgreSQL. */
export async function insertArticleRows(dataSource: DataSource, rows: ArticleRow[]): Promise<number[]> {
  const metadata = dataSource.getMetadata(Article);
  const quote = (name: string) => dataSource.driver.escape(name);
  const column = (property: string) => quote(metadata.findColumnWithPropertyName(property)!.databaseName);
  const columns = ['id', 'title', 'likeCount', 'viewCount'].map(column);
  const table = metadata.tablePath.split('.').map(quote).join('.');
  for (let first = 0; first < rows.length; first += 100) {
    const chunk = rows.slice(first, first + 100);
    const placeholders = chunk.map(
      (_, row) =>
        `(${columns.map((_, c) => dataSource.driver.createParameter(`p${row}_${c}`, row * columns.length + c)).join(', ')})`,
    );
    await dataSource.query(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${placeholders.join(', ')}`,
      chunk.flatMap(({ id, title, likeCount, viewCount }, row) => [
        id,
        title ?? `article ${first + row}`,
        likeCount,
        viewCount ?? 0,
      ]),
    );
  }
  return rows.map((row) => row.id);
}

export async function insertRemarks(
  dataSource: DataSource,
  replyCounts: number[],
  idPrefix: string,
): Promise<string[]> {
  const rows = replyCounts.map((replyCount, i) => ({ id: `${idPrefix}:{${i}}`, replyCount }));
  await dataSource.getRepository(Remark).save(rows, { chunk: 100 });
  return rows.map((row) => row.id);
}

/** Database values, read with plain SQL through the entity metadata (no counter module involved). */
export async function articleCounts(
  dataSource: DataSource,
  ids: number[],
): Promise<Map<number, { likes: number; views: number }>> {
  const rows = await dataSource.getRepository(Article).findBy(ids.map((id) => ({ id })));
  return new Map(rows.map((row) => [row.id, { likes: Number(row.likeCount), views: Number(row.viewCount) }]));
}

export async function remarkCounts(dataSource: DataSource, ids: string[]): Promise<Map<string, number>> {
  const rows = await dataSource.getRepository(Remark).findBy(ids.map((id) => ({ id })));
  return new Map(rows.map((row) => [row.id, Number(row.replyCount)]));
}
