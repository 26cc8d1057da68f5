// The counters a scenario changes ("targets": one counter of one row), the rows that hold them, and
// reading what the database holds for them, with plain TypeORM through the parent's own connection.
import { In, type DataSource } from 'typeorm';
import { Article, Remark } from '../../test/fixtures/entities.js';
import type { CounterKeys } from '../../lib/redis/counter.keys.js';
import { insertArticles, insertRemarks, spreadIds } from '../../support/rows.js';
import type { CountedEntityName } from '../worker/worker-protocol.js';

export interface CounterTarget {
  entity: CountedEntityName;
  id: number | string;
  counter: string;
}

export const targetKey = (target: CounterTarget) => `${target.entity}:${target.id}:${target.counter}`;

/** Entity classes and, per counter name, the property that holds it. */
const COUNTED = {
  Article: { target: Article, properties: { like_count: 'likeCount', view_count: 'viewCount' } },
  Remark: { target: Remark, properties: { reply_count: 'replyCount' } },
} as const satisfies Partial<
  Record<CountedEntityName, { target: abstract new () => unknown; properties: Record<string, string> }>
>;

/**
 * Inserts `count` articles with assorted start values; returns both counters of each as targets. Their
 * ids follow each other (so they share a shard or two: a shard takes runs of 100 integer ids), unless
 * `spreadOver` gives the key layout to spread them over every shard of.
 */
export async function insertArticleTargets(
  dataSource: DataSource,
  count: number,
  spreadOver?: CounterKeys,
): Promise<CounterTarget[]> {
  const likes = Array.from({ length: count }, (_, i) => (i * 7) % 11);
  const ids = await insertArticles(dataSource, likes, 3, spreadOver && spreadIds(spreadOver, count));
  return ids.flatMap((id) => [
    { entity: 'Article' as const, id, counter: 'like_count' },
    { entity: 'Article' as const, id, counter: 'view_count' },
  ]);
}

/** Inserts `count` remarks (string ids with `{`, `}` and `:`); returns their counter as targets. */
export async function insertRemarkTargets(
  dataSource: DataSource,
  count: number,
  idPrefix: string,
): Promise<CounterTarget[]> {
  const ids = await insertRemarks(
    dataSource,
    Array.from({ length: count }, (_, i) => i % 4),
    idPrefix,
  );
  return ids.map((id) => ({ entity: 'Remark' as const, id, counter: 'reply_count' }));
}

/** What the database holds for each target, keyed by `targetKey`. A missing row is an error. */
export async function readTargets(dataSource: DataSource, targets: CounterTarget[]): Promise<Map<string, number>> {
  const values = new Map<string, number>();
  for (const [entity, counted] of Object.entries(COUNTED)) {
    const wanted = targets.filter((target) => target.entity === entity);
    if (wanted.length === 0) continue;
    const ids = [...new Set(wanted.map((target) => target.id))];
    const rows = (await dataSource
      .getRepository(counted.target)
      .find({ where: { id: In(ids) } as never })) as unknown as Array<Record<string, unknown>>;
    const byId = new Map(rows.map((row) => [String(row.id), row]));
    for (const target of wanted) {
      const row = byId.get(String(target.id));
      const property = (counted.properties as Record<string, string>)[target.counter];
      if (!row || !property) throw new Error(`no database value for ${targetKey(target)}`);
      values.set(targetKey(target), Number(row[property]));
    }
  }
  return values;
}
