import type { DataSource } from 'typeorm';
import type { CountedEntity, CounterField } from '../model/counted-entity.js';
import type { RollingWindow } from '../model/rolling-window.js';
import type { CounterDialect, RollingKey } from './counter-dialect.js';
import type { CounterBuckets } from './counter.buckets.js';
import type { CounterLedger } from './counter.ledger.js';
import type { CounterRolling } from './counter-rolling.js';
import { onPrimary } from './on-primary.js';

/** Rows one statement asks about, at most: well within every database's parameters per statement. */
const IDS_PER_STATEMENT = 1_000;

/** A rolling window of a counter, over the buckets of its finest granularity that start in [from, to). */
export interface RollingCountWindow {
  counter: CounterField;
  window: RollingWindow;
  /** Where the window starts now (`rollingFrom`), Unix seconds. */
  from: number;
  /** The end of the bucket that holds now, Unix seconds. */
  to: number;
}

/** What the database has of some rows' rolling counts, as one statement saw it. */
export interface StoredRollingCounts {
  /** Per window asked for, in order: the flushed value by id as text (absent: 0). */
  values: Array<Map<string, number>>;
  /** Per row, by id as text: the batches asked about that the ledger held, as the row's statement saw it. */
  applied: Map<string, ReadonlySet<string>>;
}

/** What a statement gives back: 0 a stored sum, 1 a window's start, 2 a bucket, 3 a batch the ledger holds. */
interface RollingCountRow {
  k: string | number;
  q: string | number | null;
  r: string | null;
  s: string | number | null;
  v: string | number | null;
}

/**
 * The database's side of the overlay of rolling counts: per row and window, the sum the flush keeps,
 * set right by the buckets between the window's stored start and where it starts now (the upkeep moves
 * it on only after a flush, see RollingUpkeep) and those after now; the buckets themselves for a
 * window not created yet (no flush since it was declared). With the ledger's answer for the batches in
 * flight, all from one statement's snapshot. Read on the primary, which a replica may lag behind.
 */
export class RollingCountQuery {
  constructor(
    private readonly dataSource: DataSource,
    private readonly dialect: CounterDialect,
    private readonly ledger: CounterLedger,
    private readonly buckets: CounterBuckets,
    private readonly rolling: CounterRolling,
  ) {}

  /**
   * The flushed values of `windows` for the rows of `ids` (ids as text), and which of `batchIds` the
   * ledger held in the snapshot that read each row.
   */
  async read(
    entity: CountedEntity,
    windows: readonly RollingCountWindow[],
    ids: readonly string[],
    batchIds: readonly string[],
  ): Promise<StoredRollingCounts> {
    const stored: StoredRollingCounts = { values: windows.map(() => new Map()), applied: new Map() };
    for (let first = 0; first < ids.length; first += IDS_PER_STATEMENT) {
      const chunk = ids.slice(first, first + IDS_PER_STATEMENT);
      const rows = await this.statement(entity, windows, chunk, batchIds);
      // Each statement has its own snapshot: a batch may be written between two of them.
      const applied = new Set(rows.filter((row) => Number(row.k) === 3).map((row) => String(row.r)));
      for (const id of chunk) stored.applied.set(id, applied);
      const starts = new Map<number, number>();
      for (const row of rows) if (Number(row.k) === 1) starts.set(Number(row.q), Number(row.v));
      for (const row of rows) {
        const kind = Number(row.k);
        if (kind !== 0 && kind !== 2) continue;
        const q = Number(row.q);
        const value = kind === 0 ? Number(row.v) : Number(row.v) * bucketSign(windows[q], starts.get(q), Number(row.s));
        const values = stored.values[q];
        values.set(String(row.r), (values.get(String(row.r)) ?? 0) + value);
      }
    }
    return stored;
  }

  private statement(
    entity: CountedEntity,
    windows: readonly RollingCountWindow[],
    ids: readonly string[],
    batchIds: readonly string[],
  ): Promise<RollingCountRow[]> {
    const params: unknown[] = [];
    const parameter = (value: unknown) => {
      params.push(value);
      return this.dialect.placeholder(params.length);
    };
    const selects: string[] = [];
    const t = this.rolling.tables();
    const b = this.buckets.table();
    windows.forEach((window, q) => {
      const key: RollingKey = { entity: entity.key, counter: window.counter.name, window: window.window.name };
      // Placeholders made in the order of the text.
      const ofWindow = () =>
        `${t.entity} = ${parameter(key.entity)} AND ${t.counter} = ${parameter(key.counter)} ` +
        `AND ${t.window} = ${parameter(key.window)}`;
      const among = (column: string) => `${column} IN (${ids.map(parameter).join(', ')})`;
      const start = () => `(SELECT ${t.from} FROM ${t.windows} WHERE ${ofWindow()})`;
      const from = () => parameter(window.from);
      const to = () => parameter(window.to);
      const ofCounter =
        `${b.entity} = ${parameter(entity.key)} AND ${b.counter} = ${parameter(window.counter.name)} ` +
        `AND ${b.granularity} = ${parameter(window.counter.windows[0])} AND ${among(b.rowId)}`;
      // The buckets bucketSign counts: each is in the stored sum or not, by the start read in this snapshot.
      const needed = [
        `(${start()} IS NULL AND ${b.start} >= ${from()} AND ${b.start} < ${to()})`,
        `(${b.start} >= ${from()} AND ${b.start} < ${start()})`,
        `(${b.start} >= ${start()} AND ${b.start} < ${from()})`,
        `(${b.start} >= ${to()} AND ${b.start} >= ${start()})`,
      ];
      selects.push(
        `SELECT 2 AS k, ${q} AS q, ${b.rowId} AS r, ${b.start} AS s, ${b.value} AS v FROM ${b.table} ` +
          `WHERE ${ofCounter} AND (${needed.join(' OR ')})`,
      );
      // After the buckets, whose columns all have types: PostgreSQL types a UNION's NULLs from the left.
      selects.push(
        `SELECT 0 AS k, ${q} AS q, ${t.rowId} AS r, NULL AS s, ${t.value} AS v FROM ${t.sums} ` +
          `WHERE ${ofWindow()} AND ${among(t.rowId)}`,
        `SELECT 1 AS k, ${q} AS q, NULL AS r, NULL AS s, ${t.from} AS v FROM ${t.windows} WHERE ${ofWindow()}`,
      );
    });
    if (batchIds.length > 0) {
      const positions = batchIds.map((id) => {
        params.push(id);
        return params.length;
      });
      selects.push(
        this.ledger.selectRecordedAmong(
          (batchId) => `3 AS k, NULL AS q, ${batchId} AS r, NULL AS s, NULL AS v`,
          positions,
        ),
      );
    }
    return onPrimary(this.dataSource, (manager) => manager.query(selects.join(' UNION ALL '), params));
  }
}

/**
 * How a bucket starting at `start` counts towards `window` given the start its stored sums count from
 * (`stored`, undefined for a window not created yet): the sum counts the buckets from `stored` on, the
 * rolling count those in [from, to).
 */
function bucketSign(window: RollingCountWindow, stored: number | undefined, start: number): number {
  const inWindow = start >= window.from && start < window.to ? 1 : 0;
  const inSum = stored !== undefined && start >= stored ? 1 : 0;
  return inWindow - inSum;
}
