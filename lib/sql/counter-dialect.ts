import type { IdRange } from '../model/counted-entity.js';
import type { DeltaRows } from '../model/delta-batch.js';
import type { Granularity } from '../model/time-bucket.js';

/** The target of one set-based UPDATE, with identifiers already quoted by the driver. */
export interface DeltaTarget {
  table: string;
  idColumn: string;
  /** The id column's SQL type, for dialects that need typed parameters. */
  idType: string;
  columns: string[];
  /** Whether each of `columns` may hold NULL, which the deltas then add to as if it were 0. */
  nullable: boolean[];
}

/**
 * A counter column's current value as an UPDATE adds a delta to it (`qualified`: the column as the
 * statement names it): NULL counts as 0. Only a nullable column needs the COALESCE.
 */
export function currentValue(qualified: string, nullable: boolean): string {
  return nullable ? `COALESCE(${qualified}, 0)` : qualified;
}

/** The bucket table (CounterBucket), with its name and columns already quoted by the driver. */
export interface BucketTable {
  table: string;
  entity: string;
  counter: string;
  rowId: string;
  granularity: string;
  start: string;
  value: string;
}

/**
 * One entity's bucket changes as a transaction writes them: one per bucket, in primary key order, bucket
 * b adding `deltas[b]` to the bucket of `granularities[b]` starting at `starts[b]` of counter `counters[b]`
 * of the row whose id, as text, is `rowIds[b]`.
 */
export interface BucketRows {
  /** The entity's key (its table path). */
  entity: string;
  counters: string[];
  rowIds: string[];
  granularities: Granularity[];
  starts: number[];
  deltas: number[];
}

/** One counter's buckets of one granularity; without entity and counter, every counter's. */
export interface BucketCounter {
  /** The entity's key (its table path). */
  entity?: string;
  counter?: string;
  granularity: Granularity;
}

/** The rolling windows' tables (CounterRollingWindow, CounterRollingSum), names and columns quoted by the driver. */
export interface RollingTables {
  windows: string;
  sums: string;
  entity: string;
  counter: string;
  window: string;
  /** CounterRollingWindow's start. */
  from: string;
  /** CounterRollingSum's row id. */
  rowId: string;
  /** CounterRollingSum's sum. */
  value: string;
}

/**
 * One entity's changes to rolling sums as a transaction writes them, in primary key order: sum s adds
 * `deltas[s]` to the sum of window `windows[s]` of counter `counters[s]` of the row whose id, as text, is
 * `rowIds[s]`.
 */
export interface RollingSumRows {
  entity: string;
  counters: string[];
  windows: string[];
  rowIds: string[];
  deltas: number[];
}

/** A rolling window's key: its entity's key, its counter's name, its name. */
export interface RollingKey {
  entity: string;
  counter: string;
  window: string;
}

export interface Statement {
  sql: string;
  params: unknown[];
}

/** What differs between databases: statement shapes, placeholders and error codes. */
export interface CounterDialect {
  /**
   * Batch transactions one process may run at once, whatever `flushConcurrency` asks: 1 where the
   * driver has a single connection (SQLite), unbounded where each transaction takes a pooled one.
   */
  parallelTransactions: number;
  /** Rows per flush transaction where the option `flushBatchSize` is not set. */
  defaultFlushBatchSize: number;
  placeholder(position: number): string;
  /** The values an integer column type can hold, when the database enforces a range narrower than 64 bits. */
  integerRange(type: string, unsigned: boolean): [min: number, max: number] | undefined;
  /** Most rows one `addDeltas` statement takes, for a statement of `columns` counter columns. */
  maxRowsPerStatement(columns: number): number;
  /** One statement adding the deltas of rows `from` to `to` (exclusive) of `rows`, which are sorted by id. */
  addDeltas(target: DeltaTarget, rows: DeltaRows, from: number, to: number): Statement;
  /** Most buckets one `addBuckets` statement takes. */
  maxBucketsPerStatement: number;
  /**
   * One statement adding buckets `from` to `to` (exclusive) of `buckets` to their stored values, inserting
   * those not stored yet.
   */
  addBuckets(table: BucketTable, buckets: BucketRows, from: number, to: number): Statement;
  /**
   * One statement deleting at most `limit` buckets of one counter (or of all) and granularity that start
   * before `before`, the oldest first: the order in which the index on (granularity, start) gives them.
   */
  pruneBuckets(table: BucketTable, counter: BucketCounter, before: number, limit: number): Statement;
  /** What ends a SELECT that share-locks the rows it reads (nothing where one writer runs at a time). */
  forShare: string;
  /** What ends a SELECT that locks the rows it reads for an update (nothing where one writer runs at a time). */
  forUpdate: string;
  /** One statement inserting a rolling window's row (entity, counter, window, from: parameters 1-4) if missing. */
  insertWindow(tables: RollingTables): string;
  /** Most sums one `addRollingSums` statement takes. */
  maxSumsPerStatement: number;
  /** One statement adding sums `from` to `to` (exclusive) of `sums`, inserting those not stored yet. */
  addRollingSums(tables: RollingTables, sums: RollingSumRows, from: number, to: number): Statement;
  /**
   * One statement adding to the sums of window `key` `sign` times each row's total of its buckets of
   * `granularity` that start in [from, to), inserting the sums not stored yet.
   */
  addBucketSums(
    tables: RollingTables,
    buckets: BucketTable,
    key: RollingKey,
    granularity: Granularity,
    range: { from: number; to: number },
    sign: 1 | -1,
  ): Statement;
  /** An expression that orders integer ids kept as text (`text`) as numbers. */
  integerOrder(text: string): string;
  /** An expression that orders text (`text`) by its code points, as UTF-8 bytes compare, whatever the collation. */
  binaryOrder(text: string): string;
  /**
   * For a family of servers that take different statement shapes (MySQL and MariaDB): the dialect for
   * the server the data source reaches, from its `SELECT VERSION()`. Absent: this dialect fits all.
   */
  forServer?(version: string): CounterDialect;
  /** The ledger insert of a batch collided with an existing batch id. */
  isDuplicateKey(error: unknown): boolean;
  /** A deadlock, serialization failure or busy database: the transaction may simply be run again. */
  isTransient(error: unknown): boolean;
  /** A deadlock: the server rolled this transaction back to let another one go on. */
  isDeadlock(error: unknown): boolean;
  /** The SQL function that orders rows at random (a sample for `audit`). */
  random: string;
  /** The statement's values were at fault (a data exception), not the database's availability. */
  isDataError(error: unknown): boolean;
  /**
   * A SELECT of one row whose column `probe` holds `value` typed as a column of `type`, so that the driver
   * returns it as it returns that column's values (a string, a number, a bigint).
   */
  typedValue(value: number, type: string, unsigned: boolean): string;
}

interface DriverError {
  code?: string;
  errno?: number;
  /** mysql2's SQLSTATE. */
  sqlState?: string;
}

/** SQLSTATE class 22, data exception: a value out of range, of the wrong form, too long… */
export function isDataException(sqlState: string | undefined): boolean {
  return sqlState?.startsWith('22') ?? false;
}

export function driverErrorOf(error: unknown): DriverError {
  const wrapped = error as { driverError?: DriverError } | undefined;
  return (wrapped?.driverError ?? wrapped ?? {}) as DriverError;
}

const SIGNED_RANGES: Record<string, [number, number]> = {
  tinyint: [-128, 127],
  smallint: [-32_768, 32_767],
  int2: [-32_768, 32_767],
  mediumint: [-8_388_608, 8_388_607],
  int: [-2_147_483_648, 2_147_483_647],
  integer: [-2_147_483_648, 2_147_483_647],
  int4: [-2_147_483_648, 2_147_483_647],
};
const UNSIGNED_MAX: Record<string, number> = {
  tinyint: 255,
  smallint: 65_535,
  mediumint: 16_777_215,
  int: 4_294_967_295,
  integer: 4_294_967_295,
};

/** Ranges of PostgreSQL's and MySQL's fixed-size integer types; bigint is wider than a safe integer. */
export function fixedIntegerRange(type: string, unsigned: boolean): [number, number] | undefined {
  if (unsigned) return UNSIGNED_MAX[type] === undefined ? [0, Number.MAX_SAFE_INTEGER] : [0, UNSIGNED_MAX[type]];
  return SIGNED_RANGES[type];
}

const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };
const UINT64 = { min: 0n, max: 2n ** 64n - 1n };
const BIGINT_TYPES = new Set(['bigint', 'int8']);

/** The ids an integer primary column of `type` holds: its fixed range, or 64 bits (SQLite's integers). */
export function integerIdRange(dialect: CounterDialect, type: string, unsigned: boolean): IdRange {
  const fixed = BIGINT_TYPES.has(type) ? undefined : dialect.integerRange(type, unsigned);
  if (fixed) return { min: BigInt(fixed[0]), max: BigInt(fixed[1]) };
  return unsigned ? UINT64 : INT64;
}

/**
 * Rows `from` to `to` (exclusive) as statement parameters, row after row: its id, then its deltas;
 * `size` parameters in all, those past the rows null.
 */
export function rowParams(
  rows: DeltaRows,
  from: number,
  to: number,
  width: number,
  size = (to - from) * (1 + width),
): unknown[] {
  const params: unknown[] = new Array(size);
  let at = 0;
  for (let r = from; r < to; r++) {
    params[at++] = rows.ids[r];
    for (let c = r * width, end = c + width; c < end; c++) params[at++] = rows.deltas[c];
  }
  while (at < size) params[at++] = null;
  return params;
}

/** A table path (`schema.table` or `table`) with each part quoted by the driver. */
export function quotedTablePath(driver: { escape(name: string): string }, tablePath: string): string {
  return tablePath
    .split('.')
    .map((part) => driver.escape(part))
    .join('.');
}
