import { expect } from 'vitest';
import type { CounterKeys } from '../../lib/redis/counter.keys.js';
import { Article, Remark } from '../fixtures/entities.js';
import type { CounterApp } from './counter-app.js';
import { articleCounts, insertArticles, insertRemarks, remarkCounts, spreadIds } from '../../support/rows.js';

export interface DirtyRows {
  articleIds: number[];
  remarkIds: string[];
  /** Every shard with rows to write, as `<table>/<shard>`. */
  shards: Set<string>;
}

/**
 * 12 articles and 8 remarks, inserted and each changed through `app`, so that every shard of both
 * entities (of `keys`) has rows to write.
 */
export async function dirtyEveryShard(app: CounterApp, keys: CounterKeys, idPrefix: string): Promise<DirtyRows> {
  const { counters, dataSource } = app;
  const articleIds = await insertArticles(
    dataSource,
    Array.from({ length: 12 }, (_, i) => i),
    0,
    spreadIds(keys, 12),
  );
  const remarkIds = await insertRemarks(
    dataSource,
    Array.from({ length: 8 }, (_, i) => 100 + i),
    `${idPrefix}-${Date.now()}`,
  );
  for (const [i, id] of articleIds.entries()) await counters.increment(Article, id, 'like_count', i + 1);
  for (const id of articleIds.slice(0, 5)) await counters.increment(Article, id, 'view_count', 7);
  for (const id of remarkIds) await counters.increment(Remark, id, 'reply_count', 3);
  const shardsOf = (entity: typeof Article | typeof Remark, ids: Array<string | number>) => {
    const table = dataSource.getMetadata(entity).tablePath;
    return ids.map((id) => `${table}/${keys.shardOf(encodeURIComponent(String(id)))}`);
  };
  const shards = new Set([...shardsOf(Article, articleIds), ...shardsOf(Remark, remarkIds)]);
  expect(shards.size).toBe(2 * keys.shards);
  return { articleIds, remarkIds, shards };
}

/** Checks that the database holds exactly what the changes of `dirtyEveryShard` make. */
export async function expectEveryShardWritten(app: CounterApp, { articleIds, remarkIds }: DirtyRows): Promise<void> {
  const articles = await articleCounts(app.dataSource, articleIds);
  expect(articleIds.map((id) => articles.get(id))).toEqual(
    articleIds.map((_, i) => ({ likes: i + (i + 1), views: i < 5 ? 7 : 0 })),
  );
  const remarks = await remarkCounts(app.dataSource, remarkIds);
  expect(remarkIds.map((id) => remarks.get(id))).toEqual(remarkIds.map((_, i) => 100 + i + 3));
}
