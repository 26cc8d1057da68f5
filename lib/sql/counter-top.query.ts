import type { DataSource } from 'typeorm';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import type { BucketRange } from '../model/time-bucket.js';
import type { RollingKey } from './counter-dialect.js';
import type { CounterDialect } from './counter-dialect.js';
import type { CounterBuckets } from './counter.buckets.js';
import type { CounterLedger } from './counter.ledger.js';
import type { CounterRolling, RankedRow } from './counter-rolling.js';
import { onPrimary } from './on-primary.js';

/** Candidates one statement asks about, at most: well within every database's parameters per statement. */
const CANDIDATES_PER_STATEMENT = 5_000;

/** A row with changes the database may not have: its flushed value, and which batches the ledger held. */
export interface StoredCandidate {
  /** 0 when the database has nothing of it. */
  value: number;
  /** The batches asked about that the ledger held, in the snapshot that read `value`. */
  applied: ReadonlySet<string>;
}

/** What the database has of a ranking. */
export interface StoredTop {
  /** The rows with the highest flushed values (more than 0), highest first, ties by id (`compareRanked`). */
  ranked: RankedRow[];
  /** Per candidate asked about, by id as text. */
  candidates: Map<string, StoredCandidate>;
}

/** Where a ranking's flushed values are: summed from buckets, or a rolling window's sums. */
export type RankedSource =
  { kind: 'buckets'; counter: CounterField; ranges: BucketRange[] } | { kind: 'rolling'; key: RollingKey };

/** What a statement gives back: 0 a ranked row, 1 a candidate's value, 2 a batch the ledger holds. */
interface TopStatementRow {
  k: string | number;
  r: string;
  v: string | number | null;
}

/**
 * The order of `top`: highest value first, ties by id, as numbers for integer ids and by code points
 * otherwise; the statements below order so too, so that their rows and rows ranked in memory agree.
 */
export function compareRanked(entity: CountedEntity): (a: RankedRow, b: RankedRow) => number {
  return (a, b) => {
    if (a.value !== b.value) return b.value - a.value;
    if (entity.numericId) return BigInt(a.rowId) < BigInt(b.rowId) ? -1 : BigInt(a.rowId) > BigInt(b.rowId) ? 1 : 0;
    return Buffer.compare(Buffer.from(a.rowId, 'utf8'), Buffer.from(b.rowId, 'utf8'));
  };
}

/**
 * The database's side of a live `top`: the rows ranked highest by their flushed values, and the flushed
 * values of the rows whose changes wait in Redis (the candidates), with whether the ledger holds each
 * batch in flight, all from one statement's snapshot (one per CANDIDATES_PER_STATEMENT candidates). Read
 * on the primary, which a replica may lag behind.
 */
export class CounterTopQuery {
  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: CounterDialect,
    private readonly ledger: CounterLedger,
    private readonly buckets: CounterBuckets,
    private readonly rolling: CounterRolling,
  ) {}

  /**
   * The `count` rows of `source` ranked highest, the flushed values of `candidates` (ids as text), and
   * which of `batchIds` the ledger holds as each candidate's statement saw it.
   */
  async read(
    entity: CountedEntity,
    source: RankedSource,
    count: number,
    candidates: string[],
    batchIds: string[],
  ): Promise<StoredTop> {
    const top: StoredTop = { ranked: [], candidates: new Map() };
    let first = 0;
    do {
      const chunk = candidates.slice(first, first + CANDIDATES_PER_STATEMENT);
      const rows = await this.statement(entity, source, first === 0 ? count : 0, chunk, batchIds);
      const applied = new Set(rows.filter((row) => Number(row.k) === 2).map((row) => row.r));
      for (const id of chunk) top.candidates.set(id, { value: 0, applied });
      for (const row of rows) {
        if (Number(row.k) === 0) top.ranked.push({ rowId: row.r, value: Number(row.v) });
        else if (Number(row.k) === 1) top.candidates.set(row.r, { value: Number(row.v), applied });
      }
      first += CANDIDATES_PER_STATEMENT;
    } while (first < candidates.length);
    top.ranked.sort(compareRanked(entity));
    return top;
  }

  /** One statement: the `count` top rows (none for 0), the values of `candidates`, the ledger's batches. */
  private async statement(
    entity: CountedEntity,
    source: RankedSource,
    count: number,
    candidates: string[],
    batchIds: string[],
  ): Promise<TopStatementRow[]> {
    const params: unknown[] = [];
    const parameter = (value: unknown) => {
      params.push(value);
      return this.dialect.placeholder(params.length);
    };
    const selects: string[] = [];
    const of = source.kind === 'buckets' ? this.summedSelects(entity, source) : this.rollingSelects(entity, source);
    if (count > 0) selects.push(`SELECT 0 AS k, t.r AS r, t.v AS v FROM (${of.ranked(parameter, count)}) t`);
    if (candidates.length > 0) selects.push(`SELECT 1 AS k, ${of.candidates(parameter, candidates)}`);
    if (batchIds.length > 0) {
      const positions = batchIds.map((id) => {
        params.push(id);
        return params.length;
      });
      selects.push(this.ledger.selectRecordedAmong((batchId) => `2 AS k, ${batchId} AS r, NULL AS v`, positions));
    }
    if (selects.length === 0) return [];
    return onPrimary(this.dataSource, (manager) => manager.query(selects.join(' UNION ALL '), params));
  }

  /** The pieces of the statement that add up buckets; placeholders made in the order of the text. */
  private summedSelects(entity: CountedEntity, source: { counter: CounterField; ranges: BucketRange[] }) {
    const t = this.buckets.table();
    const ofCounter = (parameter: (value: unknown) => string) =>
      this.buckets.ofCounter(entity, source.counter, source.ranges, parameter);
    return {
      ranked: (parameter: (value: unknown) => string, count: number) =>
        `SELECT ${t.rowId} AS r, SUM(${t.value}) AS v FROM ${t.table} WHERE ${ofCounter(parameter)} ` +
        `GROUP BY ${t.rowId} HAVING SUM(${t.value}) > 0 ` +
        `ORDER BY SUM(${t.value}) DESC, ${this.idOrder(entity, t.rowId)} LIMIT ${parameter(count)}`,
      candidates: (parameter: (value: unknown) => string, ids: string[]) =>
        `${t.rowId} AS r, SUM(${t.value}) AS v FROM ${t.table} WHERE ${ofCounter(parameter)} ` +
        `AND ${t.rowId} IN (${ids.map(parameter).join(', ')}) GROUP BY ${t.rowId}`,
    };
  }

  /** The pieces of the statement that read a rolling window's sums, by their index on the value. */
  private rollingSelects(entity: CountedEntity, source: { key: RollingKey }) {
    const t = this.rolling.tables();
    const { key } = source;
    const ofWindow = (parameter: (value: unknown) => string) =>
      `${t.entity} = ${parameter(key.entity)} AND ${t.counter} = ${parameter(key.counter)} ` +
      `AND ${t.window} = ${parameter(key.window)}`;
    return {
      ranked: (parameter: (value: unknown) => string, count: number) =>
        `SELECT ${t.rowId} AS r, ${t.value} AS v FROM ${t.sums} WHERE ${ofWindow(parameter)} AND ${t.value} > 0 ` +
        `ORDER BY ${t.value} DESC, ${this.idOrder(entity, t.rowId)} LIMIT ${parameter(count)}`,
      candidates: (parameter: (value: unknown) => string, ids: string[]) =>
        `${t.rowId} AS r, ${t.value} AS v FROM ${t.sums} WHERE ${ofWindow(parameter)} ` +
        `AND ${t.rowId} IN (${ids.map(parameter).join(', ')})`,
    };
  }

  private idOrder(entity: CountedEntity, column: string): string {
    return entity.numericId ? this.dialect.integerOrder(column) : this.dialect.binaryOrder(column);
  }
}
