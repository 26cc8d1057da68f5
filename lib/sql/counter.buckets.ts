import type { DataSource, QueryRunner } from 'typeorm';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import type { DeltaBatch } from '../model/delta-batch.js';
import { canonicalIdText } from '../model/row-id.js';
import { bucketKey, type BucketRange, type Granularity } from '../model/time-bucket.js';
import { CounterBucket } from './counter-bucket.entity.js';
import {
  quotedTablePath,
  type BucketCounter,
  type BucketRows,
  type BucketTable,
  type CounterDialect,
} from './counter-dialect.js';
import type { CounterLedger } from './counter.ledger.js';
import { mergeBuckets } from './merge-buckets.js';
import { onPrimary } from './on-primary.js';

/** A row's stored buckets, and whether the ledger held a batch, as one statement saw them. */
export interface StoredBuckets {
  /** Values by `bucketKey`; a bucket not stored is absent. */
  values: Map<string, number>;
  /** Whether the ledger holds the batch asked about (false when none was). */
  batchApplied: boolean;
}

/** What the statement of `read` gives back; the ledger's row has nulls. */
interface BucketReadRow {
  g: string | null;
  s: string | number | null;
  v: string | number | null;
}

/**
 * The bucket table (CounterBucket): the windowed counters' changes per hour and per day, added in the
 * flush transaction under the batch's ledger row, so each change counts exactly once.
 */
export class CounterBuckets {
  private bucketTable?: BucketTable;

  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: CounterDialect,
    private readonly ledger: CounterLedger,
  ) {}

  /**
   * Adds one entity's batches' bucket changes in the transaction of `runner`, with the statements of
   * `dialect` (the server's), leaving out those of `missingIds`: rows deleted since their counters changed.
   * Returns the changes added (undefined when the batches have none).
   */
  async add(
    runner: QueryRunner,
    dialect: CounterDialect,
    batches: DeltaBatch[],
    missingIds: Array<string | number>,
  ): Promise<BucketRows | undefined> {
    if (!batches.some((batch) => batch.buckets)) return undefined;
    const entity = batches[0].entity;
    const buckets = mergeBuckets(batches, new Set(missingIds.map((id) => canonicalIdText(entity, id))));
    const count = buckets.deltas.length;
    for (let from = 0; from < count; from += dialect.maxBucketsPerStatement) {
      const to = Math.min(count, from + dialect.maxBucketsPerStatement);
      const statement = dialect.addBuckets(this.table(), buckets, from, to);
      await runner.query(statement.sql, statement.params);
    }
    return buckets;
  }

  /**
   * The stored buckets of one row's counter in `ranges`, and whether the ledger holds `batchId`, in one
   * statement: its snapshot has either both a batch's buckets and its ledger row, or neither. Read on the
   * primary, which a replica may lag behind.
   */
  async read(
    entity: CountedEntity,
    counter: CounterField,
    id: string | number,
    ranges: BucketRange[],
    batchId: string | undefined,
  ): Promise<StoredBuckets> {
    const { params, parameter } = this.parameters();
    const selects: string[] = [];
    if (ranges.length > 0) {
      const t = this.table();
      const ofCounter = this.ofCounter(entity, counter, ranges, parameter);
      selects.push(
        `SELECT ${t.granularity} AS g, ${t.start} AS s, ${t.value} AS v FROM ${t.table} ` +
          `WHERE ${ofCounter} AND ${t.rowId} = ${parameter(canonicalIdText(entity, id))}`,
      );
    }
    if (batchId !== undefined) {
      params.push(batchId);
      selects.push(this.ledger.selectIfRecorded('NULL AS g, NULL AS s, NULL AS v', params.length));
    }
    const stored: StoredBuckets = { values: new Map(), batchApplied: false };
    if (selects.length === 0) return stored;
    const rows: BucketReadRow[] = await onPrimary(this.dataSource, (manager) =>
      manager.query(selects.join(' UNION ALL '), params),
    );
    for (const row of rows) {
      if (row.g === null) stored.batchApplied = true;
      else stored.values.set(bucketKey(row.g as Granularity, Number(row.s)), Number(row.v));
    }
    return stored;
  }

  /**
   * Deletes at most `limit` buckets of one counter and granularity that start before `before` (Unix
   * seconds); returns how many.
   */
  async prune(counter: BucketCounter, before: number, limit: number): Promise<number> {
    const statement = this.dialect.pruneBuckets(this.table(), counter, before, limit);
    const result = await onPrimary(this.dataSource, (manager) =>
      manager.queryRunner!.query(statement.sql, statement.params, true),
    );
    return result.affected ?? 0;
  }

  /**
   * Statement parameters, each given by `parameter` where the text names it, which returns its
   * placeholder: in the order of the text, as dialects that number them by position need.
   */
  private parameters(): { params: unknown[]; parameter: (value: unknown) => string } {
    const params: unknown[] = [];
    const parameter = (value: unknown) => {
      params.push(value);
      return this.dialect.placeholder(params.length);
    };
    return { params, parameter };
  }

  /**
   * `entity = ? AND counter = ? AND (the buckets of one of the ranges)`, for the counter's buckets, its
   * placeholders made by `parameter` in the order of the text.
   */
  ofCounter(
    entity: CountedEntity,
    counter: CounterField,
    ranges: BucketRange[],
    parameter: (value: unknown) => string,
  ): string {
    const t = this.table();
    // Placeholders made in the order of the text.
    const ofCounter = `${t.entity} = ${parameter(entity.key)} AND ${t.counter} = ${parameter(counter.name)}`;
    const inRanges = ranges.map(
      (range) =>
        `(${t.granularity} = ${parameter(range.granularity)} AND ${t.start} >= ${parameter(range.from)} ` +
        `AND ${t.start} < ${parameter(range.to)})`,
    );
    return `${ofCounter} AND (${inRanges.join(' OR ')})`;
  }

  /** The bucket table's name and columns, quoted. */
  table(): BucketTable {
    if (this.bucketTable) return this.bucketTable;
    const driver = this.dataSource.driver;
    const metadata = this.dataSource.getMetadata(CounterBucket);
    const column = (property: keyof CounterBucket) =>
      driver.escape(metadata.findColumnWithPropertyName(property)!.databaseName);
    this.bucketTable = {
      table: quotedTablePath(driver, metadata.tablePath),
      entity: column('entity'),
      counter: column('counter'),
      rowId: column('rowId'),
      granularity: column('granularity'),
      start: column('start'),
      value: column('value'),
    };
    return this.bucketTable;
  }
}
