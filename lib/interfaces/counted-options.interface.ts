import type { EntityManager } from 'typeorm';

/**
 * Where a counter's true value comes from, for `recount` and `audit`: given ids (as the database returns
 * them) and an `EntityManager`, resolves with each id's true value, as a `Map` or `[id, value]` pairs;
 * an id left out counts as 0 (a `COUNT(*) … GROUP BY` has no row for it). Values may be numbers or their
 * text (PostgreSQL returns `COUNT(*)` as text).
 *
 * @example
 * ```ts
 * source: async (ids, manager) => {
 *   const rows = await manager.getRepository(Comment).createQueryBuilder('c')
 *     .select('c.solutionId', 'id').addSelect('COUNT(*)', 'value')
 *     .where('c.solutionId IN (:...ids)', { ids }).groupBy('c.solutionId').getRawMany();
 *   return rows.map((row) => [row.id, row.value]);
 * }
 * ```
 */
export type CounterSource = (
  ids: Array<string | number>,
  manager: EntityManager,
) => Promise<Iterable<readonly [id: string | number, value: number | string | bigint]>>;

/** Options of `@Counted()`. */
export interface CountedOptions {
  /** Smallest value the counter may take; a change that would go below it is refused. @default -(2^53-1) */
  min?: number;
  /** Largest value the counter may take; a change that would go above it is refused. @default 2^53-1 */
  max?: number;
  /** The counter's true value, read by `CounterService.recount()` and `audit()`. @default none */
  source?: CounterSource;
  /**
   * Keep the counter's changes per hour and/or per day too, for `count`, `series` and `top` over a window
   * of time. Each change adds to the current bucket of each granularity, chosen by the Redis server's
   * clock (UTC); the flush writes the buckets into `CounterBucket` with the total, exactly once. Needs
   * `CounterBucket` among the data source's entities. @default none
   */
  windows?: ReadonlyArray<'hour' | 'day'>;
  /**
   * Rolling windows to rank rows by with `top`: each `<n>h` or `<n>d`, a whole number of the finest of
   * `windows` (which it needs), no longer than `bucketRetentionMs` keeps those buckets (less two). The
   * flush keeps each row's sum over each window in `CounterRollingSum`, so that `top` over the last `<n>`
   * hours or days reads an index instead of adding up buckets. Needs `CounterRollingWindow` and
   * `CounterRollingSum` among the data source's entities. @default none
   */
  rolling?: ReadonlyArray<`${number}h` | `${number}d`>;
}

/** What `@Counted()` records on an entity class, one entry per decorated property. */
export interface CountedPropertyMetadata {
  propertyName: string;
  counterName: string;
  options: CountedOptions;
}

/** What `@RollingCount()` records on an entity class, one entry per decorated property. */
export interface RollingCountPropertyMetadata {
  propertyName: string;
  counterName: string;
  /** As given: one of the counter's `rolling` windows (`'24h'`). */
  window: string;
}
